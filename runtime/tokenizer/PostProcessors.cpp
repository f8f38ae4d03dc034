//===- PostProcessors.cpp - tokenizer.json "post_processor" types ---------===//
//
// Only ids and type ids matter to Kiln: offsets are not produced, so
// ByteLevel's offset trimming has nothing to do. Each type joins a sequence
// and its pair as the Rust library does, type ids included.
//
//===----------------------------------------------------------------------===//
#include "Components.h"

#include "TokenizerError.h"

namespace kiln::tok {

namespace {

void append(Encoding &to, const std::vector<int32_t> &ids, int32_t typeId) {
  to.ids.insert(to.ids.end(), ids.begin(), ids.end());
  to.typeIds.insert(to.typeIds.end(), ids.size(), typeId);
}

class Template : public PostProcessor {
public:
  // An item is one of the sequences ($A is 0, $B is 1; a sequence that is
  // not there adds nothing) or the ids of one special token, with the type
  // id it gives them.
  struct Item {
    int sequence = -1;
    std::vector<int32_t> specialIds;
    int32_t typeId = 0;
  };
  Template(std::vector<Item> single, std::optional<std::vector<Item>> pair, std::string pairPath)
      : single_(std::move(single)), pair_(std::move(pair)), pairPath_(std::move(pairPath)) {}

  void process(std::vector<Encoding> &encodings, bool addSpecialTokens) const override {
    if (encodings.size() > 1 && !pair_)
      throw TokenizerError(pairPath_ + ": missing, so pairs of sequences cannot be encoded");
    const std::vector<Item> &items = encodings.size() > 1 ? *pair_ : single_;
    // Room for the sequences and a special token per item, which is what
    // the templates of real files hold.
    size_t length = items.size();
    for (const Encoding &encoding : encodings)
      length += encoding.ids.size();
    Encoding out;
    out.ids.reserve(length);
    out.typeIds.reserve(length);
    for (const Item &item : items) {
      if (item.sequence < 0) {
        if (addSpecialTokens)
          append(out, item.specialIds, item.typeId);
      } else if ((size_t)item.sequence < encodings.size()) {
        append(out, encodings[item.sequence].ids, item.typeId);
      }
    }
    encodings.assign(1, std::move(out));
  }

private:
  std::vector<Item> single_;
  std::optional<std::vector<Item>> pair_;
  std::string pairPath_;
};

class NoOp : public PostProcessor {
public:
  void process(std::vector<Encoding> &, bool) const override {}
};

class ProcessorSequence : public PostProcessor {
public:
  explicit ProcessorSequence(std::vector<std::unique_ptr<PostProcessor>> steps)
      : steps_(std::move(steps)) {}
  void process(std::vector<Encoding> &encodings, bool addSpecialTokens) const override {
    for (const auto &step : steps_)
      step->process(encodings, addSpecialTokens);
  }

private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

int32_t typeIdOf(const Json &item, const JsonPath &path) {
  auto typeId = item.find("type_id");
  if (typeId == item.end())
    return 0;
  if (!typeId->is_number_integer() || typeId->get<int64_t>() < 0 ||
      typeId->get<int64_t>() > INT32_MAX)
    throw TokenizerError((path / "type_id").text + ": expected a non-negative integer");
  return typeId->get<int32_t>();
}

std::vector<Template::Item> templateItems(const Json &items, const Json &specials,
                                          const JsonPath &path, const JsonPath &specialsPath) {
  if (!items.is_array())
    throw TokenizerError(path.text + ": expected a list");
  std::vector<Template::Item> result;
  for (size_t i = 0; i < items.size(); ++i) {
    JsonPath itemPath = path[i];
    const Json &item = items[i];
    Template::Item parsed;
    if (item.contains("Sequence")) {
      JsonPath sequencePath = itemPath / "Sequence";
      std::string id = stringField(item["Sequence"], "id", sequencePath);
      if (id != "A" && id != "B")
        throw TokenizerError((sequencePath / "id").text + ": expected A or B, got '" + id + "'");
      parsed.sequence = id == "A" ? 0 : 1;
      parsed.typeId = typeIdOf(item["Sequence"], sequencePath);
    } else if (item.contains("SpecialToken")) {
      JsonPath tokenPath = itemPath / "SpecialToken";
      std::string name = stringField(item["SpecialToken"], "id", tokenPath);
      auto special = specials.find(name);
      if (special == specials.end())
        throw TokenizerError(tokenPath.text + ": '" + name + "' is not in " + specialsPath.text);
      for (const Json &id : field(*special, "ids", specialsPath / name)) {
        if (!id.is_number_integer())
          throw TokenizerError((specialsPath / name / "ids").text + ": expected integers");
        parsed.specialIds.push_back(id.get<int32_t>());
      }
      parsed.typeId = typeIdOf(item["SpecialToken"], tokenPath);
    } else {
      throw TokenizerError(itemPath.text + ": expected Sequence or SpecialToken");
    }
    result.push_back(std::move(parsed));
  }
  return result;
}

std::unique_ptr<PostProcessor> makeTemplate(const Json &config, const JsonPath &path) {
  const Json &specials = field(config, "special_tokens", path);
  JsonPath specialsPath = path / "special_tokens";
  std::vector<Template::Item> single =
      templateItems(field(config, "single", path), specials, path / "single", specialsPath);
  std::optional<std::vector<Template::Item>> pair;
  auto pairConfig = config.find("pair");
  if (pairConfig != config.end() && !pairConfig->is_null())
    pair = templateItems(*pairConfig, specials, path / "pair", specialsPath);
  return std::make_unique<Template>(std::move(single), std::move(pair), (path / "pair").text);
}

// BertProcessing and RobertaProcessing are fixed templates, as the Rust
// library joins them: BERT's [CLS] A [SEP] B [SEP] gives the pair's part
// type 1 (without the special tokens too: the sequences keep their 0 and
// 1); RoBERTa's <s> A </s> </s> B </s> makes every type id 0, as RoBERTa
// has no token types. Each names its tokens as ["token", id].
std::unique_ptr<PostProcessor> makeClsSep(const Json &config, const JsonPath &path,
                                          bool roberta) {
  auto idOf = [&](const char *key) {
    const Json &pair = field(config, key, path);
    if (!pair.is_array() || pair.size() != 2 || !pair[1].is_number_integer())
      throw TokenizerError((path / key).text + ": expected [token, id]");
    return pair[1].get<int32_t>();
  };
  auto special = [](int32_t id, int32_t typeId) { return Template::Item{-1, {id}, typeId}; };
  auto sequence = [](int which, int32_t typeId) { return Template::Item{which, {}, typeId}; };
  const int32_t cls = idOf("cls"), sep = idOf("sep");
  std::vector<Template::Item> single = {special(cls, 0), sequence(0, 0), special(sep, 0)};
  std::vector<Template::Item> pair = single;
  if (roberta)
    pair.insert(pair.end(), {special(sep, 0), sequence(1, 0), special(sep, 0)});
  else
    pair.insert(pair.end(), {sequence(1, 1), special(sep, 1)});
  return std::make_unique<Template>(std::move(single), std::move(pair), (path / "pair").text);
}

} // namespace

std::unique_ptr<PostProcessor> makePostProcessor(const Json &config, const JsonPath &path) {
  if (config.is_null())
    return nullptr;
  std::string type = stringField(config, "type", path);
  if (type == "TemplateProcessing")
    return makeTemplate(config, path);
  if (type == "BertProcessing")
    return makeClsSep(config, path, /*roberta=*/false);
  if (type == "RobertaProcessing")
    return makeClsSep(config, path, /*roberta=*/true);
  if (type == "ByteLevel")
    return std::make_unique<NoOp>();
  if (type == "Sequence") {
    const Json &list = field(config, "processors", path);
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (size_t i = 0; i < list.size(); ++i)
      if (auto step = makePostProcessor(list[i], (path / "processors")[i]))
        steps.push_back(std::move(step));
    return std::make_unique<ProcessorSequence>(std::move(steps));
  }
  unsupported("post-processor", type, path,
              "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel "
              "and Sequence");
}

} // namespace kiln::tok
