//===- PostProcessors.cpp - tokenizer.json "post_processor" types ---------===//
//
// Only the ids matter to Kiln: offsets and type ids are not produced, so
// ByteLevel's offset trimming has nothing to do. Pairs of sequences are not
// encoded yet, so only the "single" template is read.
//
//===----------------------------------------------------------------------===//
#include "Components.h"

#include "TokenizerError.h"

namespace kiln::tok {

namespace {

class Template : public PostProcessor {
public:
  // Each item is either the sequence itself (an empty list) or the ids of one
  // special token.
  explicit Template(std::vector<std::optional<std::vector<int32_t>>> items)
      : items_(std::move(items)) {}
  void process(std::vector<int32_t> &ids) const override {
    std::vector<int32_t> out;
    out.reserve(ids.size() + items_.size());
    for (const auto &item : items_) {
      if (item)
        out.insert(out.end(), item->begin(), item->end());
      else
        out.insert(out.end(), ids.begin(), ids.end());
    }
    ids = std::move(out);
  }

private:
  std::vector<std::optional<std::vector<int32_t>>> items_;
};

class NoOp : public PostProcessor {
public:
  void process(std::vector<int32_t> &) const override {}
};

class ProcessorSequence : public PostProcessor {
public:
  explicit ProcessorSequence(std::vector<std::unique_ptr<PostProcessor>> steps)
      : steps_(std::move(steps)) {}
  void process(std::vector<int32_t> &ids) const override {
    for (const auto &step : steps_)
      step->process(ids);
  }

private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

std::unique_ptr<PostProcessor> makeTemplate(const Json &config, const JsonPath &path) {
  const Json &single = field(config, "single", path);
  const Json &specials = field(config, "special_tokens", path);
  std::vector<std::optional<std::vector<int32_t>>> items;
  for (size_t i = 0; i < single.size(); ++i) {
    JsonPath itemPath = (path / "single")[i];
    const Json &item = single[i];
    if (item.contains("Sequence")) {
      items.emplace_back();
      continue;
    }
    if (!item.contains("SpecialToken"))
      throw TokenizerError(itemPath.text + ": expected Sequence or SpecialToken");
    std::string name = stringField(item["SpecialToken"], "id", itemPath / "SpecialToken");
    auto special = specials.find(name);
    if (special == specials.end())
      throw TokenizerError(itemPath.text + ": '" + name +
                           "' is not in " + (path / "special_tokens").text);
    std::vector<int32_t> ids;
    for (const Json &id : field(*special, "ids", path / "special_tokens" / name)) {
      if (!id.is_number_integer())
        throw TokenizerError((path / "special_tokens" / name / "ids").text +
                             ": expected integers");
      ids.push_back(id.get<int32_t>());
    }
    items.emplace_back(std::move(ids));
  }
  return std::make_unique<Template>(std::move(items));
}

// BertProcessing and RobertaProcessing: [cls] sequence [sep], each given as
// ["token", id].
std::unique_ptr<PostProcessor> makeClsSep(const Json &config, const JsonPath &path) {
  auto idOf = [&](const char *key) {
    const Json &pair = field(config, key, path);
    if (!pair.is_array() || pair.size() != 2 || !pair[1].is_number_integer())
      throw TokenizerError((path / key).text + ": expected [token, id]");
    return pair[1].get<int32_t>();
  };
  std::vector<std::optional<std::vector<int32_t>>> items;
  items.emplace_back(std::vector<int32_t>{idOf("cls")});
  items.emplace_back();
  items.emplace_back(std::vector<int32_t>{idOf("sep")});
  return std::make_unique<Template>(std::move(items));
}

} // namespace

std::unique_ptr<PostProcessor> makePostProcessor(const Json &config, const JsonPath &path) {
  if (config.is_null())
    return nullptr;
  std::string type = stringField(config, "type", path);
  if (type == "TemplateProcessing")
    return makeTemplate(config, path);
  if (type == "BertProcessing" || type == "RobertaProcessing")
    return makeClsSep(config, path);
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
