//===- TokenizerTest.cpp - The tokenizer's rules, one at a time -----------===//
//
// test/tokenizer/check_references.py holds the tokenizer to the JavaScript
// references on real vocabularies; these tests pin the rules a corpus may not
// reach (split behaviours, added-token options, streaming across a split
// character, errors) on small tokenizer.json files written here, through the
// public C and C++ API.
//
//===----------------------------------------------------------------------===//
#include "kiln/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>

namespace {

using Json = nlohmann::json;

// A WordLevel tokenizer whose vocabulary is `words` in order: each piece the
// pipeline produces comes out as its id, so the ids spell the pieces.
Json wordLevel(const std::vector<std::string> &words) {
  Json vocab = Json::object();
  for (size_t i = 0; i < words.size(); ++i)
    vocab[words[i]] = (int)i;
  return {{"version", "1.0"},
          {"added_tokens", Json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", nullptr},
          {"post_processor", nullptr},
          {"decoder", nullptr},
          {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", words[0]}}}};
}

// Writes the tokenizer to a fresh directory (with an optional
// tokenizer_config.json) and returns the directory.
class TempTokenizer {
public:
  explicit TempTokenizer(const Json &tokenizer, const Json &config = nullptr) {
    char pattern[] = "/tmp/kiln-tokenizer-test-XXXXXX";
    dir_ = mkdtemp(pattern);
    std::ofstream(dir_ + "/tokenizer.json") << tokenizer.dump();
    if (!config.is_null())
      std::ofstream(dir_ + "/tokenizer_config.json") << config.dump();
  }
  ~TempTokenizer() {
    std::remove((dir_ + "/tokenizer.json").c_str());
    std::remove((dir_ + "/tokenizer_config.json").c_str());
    rmdir(dir_.c_str());
  }
  const std::string &path() const { return dir_; }

private:
  std::string dir_;
};

std::string loadError(const Json &tokenizer) {
  TempTokenizer file(tokenizer);
  try {
    kiln::Tokenizer loaded(file.path());
  } catch (const kiln::Error &e) {
    EXPECT_EQ(e.code(), KILN_STATUS_INVALID_ARGUMENT);
    return e.what();
  }
  return "loaded";
}

// The Rust library's documented example of each split behaviour, on
// "the-final--countdown" split at "-".
TEST(TokenizerTest, SplitBehaviors) {
  struct Case {
    const char *behavior;
    std::vector<std::string> pieces;
  } cases[] = {
      {"Removed", {"the", "final", "countdown"}},
      {"Isolated", {"the", "-", "final", "-", "-", "countdown"}},
      {"MergedWithPrevious", {"the-", "final-", "-", "countdown"}},
      {"MergedWithNext", {"the", "-final", "-", "-countdown"}},
      {"Contiguous", {"the", "-", "final", "--", "countdown"}},
  };
  std::vector<std::string> words = {"<unk>", "the", "-", "final", "countdown", "the-",
                                    "final-", "-final", "-countdown", "--"};
  for (const Case &c : cases) {
    Json tokenizer = wordLevel(words);
    tokenizer["pre_tokenizer"] = {{"type", "Split"},
                                  {"pattern", {{"String", "-"}}},
                                  {"behavior", c.behavior},
                                  {"invert", false}};
    TempTokenizer file(tokenizer);
    kiln::Tokenizer loaded(file.path());
    std::vector<int32_t> expected;
    for (const std::string &piece : c.pieces)
      expected.push_back(loaded.tokenToId(piece).value());
    EXPECT_EQ(loaded.encode("the-final--countdown"), expected) << c.behavior;
  }
}

// single_word needs word boundaries; lstrip and rstrip take the whitespace
// beside the token; a normalized token is found after the normalizer runs,
// a raw one before it.
TEST(TokenizerTest, AddedTokenOptions) {
  Json tokenizer = wordLevel({"<unk>", "a", "b", "hello", "HELLO", "word"});
  tokenizer["pre_tokenizer"] = {{"type", "WhitespaceSplit"}};
  tokenizer["normalizer"] = {{"type", "Lowercase"}};
  tokenizer["added_tokens"] = {
      {{"id", 10}, {"content", "<sep>"}, {"single_word", false}, {"lstrip", true},
       {"rstrip", true}, {"normalized", false}, {"special", true}},
      {{"id", 11}, {"content", "word"}, {"single_word", true}, {"lstrip", false},
       {"rstrip", false}, {"normalized", true}, {"special", false}},
      {{"id", 12}, {"content", "HELLO"}, {"single_word", false}, {"lstrip", false},
       {"rstrip", false}, {"normalized", false}, {"special", false}}};
  TempTokenizer file(tokenizer);
  kiln::Tokenizer loaded(file.path());
  // "<sep>" swallows the spaces on both sides.
  EXPECT_EQ(loaded.encode("a  <sep>  b"), (std::vector<int32_t>{1, 10, 2}));
  // "word" inside "awordb" is not a single word: the model sees "awordb".
  EXPECT_EQ(loaded.encode("awordb"), (std::vector<int32_t>{0}));
  EXPECT_EQ(loaded.encode("a WORD b"), (std::vector<int32_t>{1, 11, 2}));
  // The raw "HELLO" is matched before lowercasing; "Hello" is not it.
  EXPECT_EQ(loaded.encode("HELLO Hello"), (std::vector<int32_t>{12, 3}));
  EXPECT_EQ(loaded.decode({1, 10, 2}), "a <sep> b");
  EXPECT_EQ(loaded.decode({1, 10, 2}, /*skipSpecialTokens=*/true), "a b");
  EXPECT_TRUE(loaded.isSpecial(10));
  EXPECT_FALSE(loaded.isSpecial(11));
}

// A byte-level BPE whose vocabulary has the bytes but no merges: "€" (three
// bytes) is three tokens, and a stream must hold the first two back.
Json byteLevelBpe() {
  Json vocab = Json::object();
  // GPT-2's byte table: printable bytes stand for themselves, the others
  // move up to U+0100 onwards in byte order; only the bytes these tests use
  // are in the vocabulary.
  vocab["a"] = 0;
  vocab["\xC3\xA2"] = 1; // byte 0xE2 is U+00E2
  vocab["\xC4\xA4"] = 2; // byte 0x82 is U+0124 (after 0-0x20 and 0x7F-0x81)
  vocab["\xC2\xAC"] = 3; // byte 0xAC is U+00AC
  vocab["\xC4\xA0"] = 4; // byte 0x20 (space) is U+0120
  return {{"version", "1.0"},
          {"added_tokens", Json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false},
                             {"trim_offsets", true}, {"use_regex", true}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array()}}}};
}

TEST(TokenizerTest, StreamNeverSplitsACharacter) {
  TempTokenizer file(byteLevelBpe());
  kiln::Tokenizer loaded(file.path());
  std::vector<int32_t> ids = loaded.encode("a \xE2\x82\xAC");
  ASSERT_EQ(ids, (std::vector<int32_t>{0, 4, 1, 2, 3}));
  EXPECT_EQ(loaded.decode(ids), "a \xE2\x82\xAC");

  kiln::Detokenizer stream(loaded);
  EXPECT_EQ(stream.push(0), "a");
  EXPECT_EQ(stream.push(4), " ");
  EXPECT_EQ(stream.push(1), "");
  EXPECT_EQ(stream.push(2), "");
  EXPECT_EQ(stream.push(3), "\xE2\x82\xAC");
  EXPECT_EQ(stream.finish(), "");

  // Ids pushed together are held together while their text ends inside a
  // character; cut off there, the end comes out as the whole decode gives
  // it: one U+FFFD.
  kiln::Detokenizer cut(loaded);
  EXPECT_EQ(cut.push(std::vector<int32_t>{0, 1, 2}), "");
  EXPECT_EQ(cut.finish(), "a\xEF\xBF\xBD");
  EXPECT_EQ(loaded.decode({0, 1, 2}), "a\xEF\xBF\xBD");
}

// Llama's SentencePiece style: the decoder strips the first token's leading
// space, so a stream that starts after a prompt keeps it only when given the
// prompt as context.
TEST(TokenizerTest, StreamContextKeepsTheLeadingSpace) {
  Json tokenizer = wordLevel({"<unk>", "\xE2\x96\x81Hello", "\xE2\x96\x81world"});
  tokenizer["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"},
                                {"prepend_scheme", "always"}, {"split", true}};
  tokenizer["decoder"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"},
                          {"prepend_scheme", "always"}, {"split", true}};
  TempTokenizer file(tokenizer);
  kiln::Tokenizer loaded(file.path());
  EXPECT_EQ(loaded.encode("Hello world"), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(loaded.decode({2}), "world");
  kiln::Detokenizer alone(loaded);
  EXPECT_EQ(alone.push(2), "world");
  kiln::Detokenizer afterPrompt(loaded, {1});
  EXPECT_EQ(afterPrompt.push(2), " world");
}

TEST(TokenizerTest, TemplateAddsSpecialTokens) {
  Json tokenizer = wordLevel({"<unk>", "[CLS]", "[SEP]", "hi"});
  tokenizer["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", {{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}},
                  {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                  {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}}},
      {"pair", Json::array()},
      {"special_tokens", {{"[CLS]", {{"id", "[CLS]"}, {"ids", {1}}, {"tokens", {"[CLS]"}}}},
                          {"[SEP]", {{"id", "[SEP]"}, {"ids", {2}}, {"tokens", {"[SEP]"}}}}}}};
  TempTokenizer file(tokenizer, {{"bos_token", "[CLS]"}, {"eos_token", {{"content", "[SEP]"}}}});
  kiln::Tokenizer loaded(file.path());
  EXPECT_EQ(loaded.encode("hi"), (std::vector<int32_t>{1, 3, 2}));
  EXPECT_EQ(loaded.encode("hi", /*addSpecialTokens=*/false), (std::vector<int32_t>{3}));
  EXPECT_EQ(loaded.bosId(), 1);
  EXPECT_EQ(loaded.eosId(), 2);
}

// The chat template comes from tokenizer_config.json, with its bos and eos
// tokens; without one the call fails as a precondition, naming the file.
TEST(TokenizerTest, ChatTemplateFromTheConfig) {
  Json config = {{"bos_token", "<s>"},
                 {"eos_token", "</s>"},
                 {"chat_template", "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: "
                                   "{{ m['content'] }}{{ eos_token }}{% endfor %}"}};
  TempTokenizer withTemplate(wordLevel({"<unk>"}), config);
  kiln::Tokenizer loaded(withTemplate.path());
  EXPECT_EQ(loaded.applyChatTemplate(
                R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})"),
            "<s>user: hi</s>assistant: yo</s>");

  TempTokenizer without(wordLevel({"<unk>"}), {{"bos_token", "<s>"}});
  kiln::Tokenizer plain(without.path());
  try {
    plain.applyChatTemplate(R"({"messages": []})");
    ADD_FAILURE() << "rendered a template that does not exist";
  } catch (const kiln::Error &e) {
    EXPECT_EQ(e.code(), KILN_STATUS_FAILED_PRECONDITION);
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json names none"), std::string::npos);
  }
}

// Of several named chat templates (a list in tokenizer_config.json),
// "tool_use" serves a context with tools and "default" the rest, as in
// transformers; a list with neither is refused, naming what it has.
TEST(TokenizerTest, NamedChatTemplates) {
  Json config = {{"chat_template",
                  {{{"name", "default"}, {"template", "plain {{ messages|length }}"}},
                   {{"name", "tool_use"}, {"template", "tools {{ tools|length }}"}}}}};
  TempTokenizer named(wordLevel({"<unk>"}), config);
  kiln::Tokenizer loaded(named.path());
  EXPECT_EQ(loaded.applyChatTemplate(R"({"messages": [{"role": "user", "content": "hi"}]})"),
            "plain 1");
  EXPECT_EQ(loaded.applyChatTemplate(R"({"messages": [], "tools": [{"type": "function"}]})"),
            "tools 1");
  EXPECT_EQ(loaded.applyChatTemplate(R"({"messages": [], "tools": null})"), "plain 0");

  Json noDefault = {{"chat_template", {{{"name", "rag"}, {"template", "r"}},
                                       {{"name", "tool_use"}, {"template", "t"}}}}};
  TempTokenizer other(wordLevel({"<unk>"}), noDefault);
  kiln::Tokenizer withoutDefault(other.path());
  EXPECT_EQ(withoutDefault.applyChatTemplate(R"({"messages": [], "tools": []})"), "t");
  try {
    withoutDefault.applyChatTemplate(R"({"messages": []})");
    ADD_FAILURE() << "chose a template without a default";
  } catch (const kiln::Error &e) {
    EXPECT_EQ(e.code(), KILN_STATUS_FAILED_PRECONDITION);
    EXPECT_NE(std::string(e.what()).find("has several templates ('rag', 'tool_use') and none is "
                                         "named 'default'"),
              std::string::npos)
        << e.what();
  }
}

// A text and its pair, joined as each post-processor of the Rust library
// joins them (tokenizers/src/processors): the pair arrives with type id 1,
// BERT's template keeps it, RoBERTa's makes every type id 0, and without the
// special tokens only the template's type ids remain.
TEST(TokenizerTest, PairsTakeEachProcessorsTypeIds) {
  using Ids = std::vector<int32_t>;
  Json specials = {{"[CLS]", {{"id", "[CLS]"}, {"ids", {1}}, {"tokens", {"[CLS]"}}}},
                   {"[SEP]", {{"id", "[SEP]"}, {"ids", {2}}, {"tokens", {"[SEP]"}}}}};
  auto special = [](const char *name, int typeId) {
    return Json{{"SpecialToken", {{"id", name}, {"type_id", typeId}}}};
  };
  auto sequence = [](const char *name, int typeId) {
    return Json{{"Sequence", {{"id", name}, {"type_id", typeId}}}};
  };
  struct Case {
    const char *name;
    Json processor;
    Ids ids, typeIds, plainIds, plainTypeIds;
  } cases[] = {
      {"template",
       {{"type", "TemplateProcessing"},
        {"single", {special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0)}},
        {"pair",
         {special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0), sequence("B", 1),
          special("[SEP]", 1)}},
        {"special_tokens", specials}},
       {1, 3, 2, 4, 2}, {0, 0, 0, 1, 1}, {3, 4}, {0, 1}},
      {"bert",
       {{"type", "BertProcessing"}, {"sep", {"[SEP]", 2}}, {"cls", {"[CLS]", 1}}},
       {1, 3, 2, 4, 2}, {0, 0, 0, 1, 1}, {3, 4}, {0, 1}},
      {"roberta",
       {{"type", "RobertaProcessing"}, {"sep", {"[SEP]", 2}}, {"cls", {"[CLS]", 1}},
        {"trim_offsets", true}, {"add_prefix_space", true}},
       {1, 3, 2, 2, 4, 2}, {0, 0, 0, 0, 0, 0}, {3, 4}, {0, 0}},
      {"none", nullptr, {3, 4}, {0, 1}, {3, 4}, {0, 1}},
  };
  for (const Case &c : cases) {
    Json tokenizer = wordLevel({"<unk>", "[CLS]", "[SEP]", "hi", "yo"});
    tokenizer["post_processor"] = c.processor;
    TempTokenizer file(tokenizer);
    kiln::Tokenizer loaded(file.path());
    kiln::Tokenizer::Encoding joined = loaded.encodePair("hi", "yo");
    EXPECT_EQ(joined.ids, c.ids) << c.name;
    EXPECT_EQ(joined.typeIds, c.typeIds) << c.name;
    kiln::Tokenizer::Encoding plain = loaded.encodePair("hi", "yo", /*addSpecialTokens=*/false);
    EXPECT_EQ(plain.ids, c.plainIds) << c.name;
    EXPECT_EQ(plain.typeIds, c.plainTypeIds) << c.name;
    // Without a pair: the text alone, as encode gives it, with its type ids.
    kiln::Tokenizer::Encoding single = loaded.encodePair("hi", std::nullopt);
    EXPECT_EQ(single.ids, loaded.encode("hi")) << c.name;
    EXPECT_EQ(single.typeIds, Ids(single.ids.size(), 0)) << c.name;
  }

  // An empty pair is still a pair.
  Json bert = wordLevel({"<unk>", "[CLS]", "[SEP]", "hi"});
  bert["post_processor"] = cases[1].processor;
  TempTokenizer bertFile(bert);
  kiln::Tokenizer withEmpty(bertFile.path());
  EXPECT_EQ(withEmpty.encodePair("hi", "").ids, (Ids{1, 3, 2, 2}));

  // A template without a pair form cannot encode pairs, and says so.
  Json singleOnly = wordLevel({"<unk>", "[CLS]", "[SEP]", "hi", "yo"});
  singleOnly["post_processor"] = cases[0].processor;
  singleOnly["post_processor"].erase("pair");
  TempTokenizer singleFile(singleOnly);
  kiln::Tokenizer loaded(singleFile.path());
  try {
    loaded.encodePair("hi", "yo");
    ADD_FAILURE() << "encoded a pair without a pair template";
  } catch (const kiln::Error &e) {
    EXPECT_EQ(e.code(), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("post_processor.pair: missing"), std::string::npos)
        << e.what();
  }
}

Json unigram(const std::vector<std::pair<std::string, double>> &pieces) {
  Json vocab = Json::array();
  for (const auto &[piece, score] : pieces)
    vocab.push_back({piece, score});
  Json tokenizer = wordLevel({"<unk>"});
  tokenizer["model"] = {{"type", "Unigram"}, {"unk_id", 0}, {"vocab", vocab},
                        {"byte_fallback", false}};
  return tokenizer;
}

// The Rust library's documented unigram example, then what it does with
// characters no piece covers and with paths of equal score.
TEST(TokenizerTest, UnigramRules) {
  using Ids = std::vector<int32_t>;
  Json pieces = unigram({{"<unk>", 0.0}, {"a", 0.0}, {"b", 0.0}, {"c", 0.0}, {"d", 0.0},
                         {"cd", 1.0}, {"ab", 2.0}, {"abc", 5.0}, {"abcd", 10.0},
                         {"<0x78>", 0.0}});
  {
    // "abcd" "a" "cd" "xx": the two unknown x's fuse into one <unk>.
    TempTokenizer file(pieces);
    kiln::Tokenizer loaded(file.path());
    EXPECT_EQ(loaded.encode("abcdacdxx"), (Ids{8, 1, 5, 0}));
  }
  {
    // With byte_fallback the run is spelt in byte pieces instead.
    Json fallback = pieces;
    fallback["model"]["byte_fallback"] = true;
    TempTokenizer file(fallback);
    kiln::Tokenizer loaded(file.path());
    EXPECT_EQ(loaded.encode("abcdacdxx"), (Ids{8, 1, 5, 9, 9}));
    // ... unless a byte has no piece: then <unk> after all.
    EXPECT_EQ(loaded.encode("abxy"), (Ids{6, 0}));
  }
  {
    // Equal totals: the path found first (the longest last piece) wins.
    TempTokenizer file(unigram({{"<unk>", 0.0}, {"a", -1.0}, {"b", -1.0}, {"ab", -2.0}}));
    kiln::Tokenizer loaded(file.path());
    EXPECT_EQ(loaded.encode("ab"), (Ids{3}));
    EXPECT_EQ(loaded.encode("aab"), (Ids{1, 3}));
  }
  {
    Json noUnknown = pieces;
    noUnknown["model"]["unk_id"] = nullptr;
    TempTokenizer file(noUnknown);
    kiln::Tokenizer loaded(file.path());
    EXPECT_EQ(loaded.encode("abcd"), (Ids{8}));
    try {
      loaded.encode("abz");
      ADD_FAILURE() << "encoded a character no piece covers, without an unknown piece";
    } catch (const kiln::Error &e) {
      EXPECT_NE(std::string(e.what()).find("'z' is not in the vocabulary and there is no unk_id"),
                std::string::npos)
          << e.what();
    }
  }
}

// One tokenizer, several threads: the BPE word cache is shared and locked.
TEST(TokenizerTest, EncodesFromManyThreads) {
  Json tokenizer = byteLevelBpe();
  tokenizer["model"]["vocab"]["aa"] = 5;
  tokenizer["model"]["merges"] = Json::array({Json::array({"a", "a"})});
  TempTokenizer file(tokenizer);
  kiln::Tokenizer loaded(file.path());
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += std::string(1 + i % 7, 'a') + " ";
  std::vector<int32_t> expected = loaded.encode(text);
  std::vector<std::thread> threads;
  std::vector<bool> same(4, false);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      bool all = true;
      for (int rep = 0; rep < 50; ++rep)
        all = all && loaded.encode(text) == expected;
      same[t] = all;
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < 4; ++t)
    EXPECT_TRUE(same[t]) << "thread " << t;
}

TEST(TokenizerTest, ErrorsNameTheCulprit) {
  Json unigram = wordLevel({"<unk>"});
  unigram["model"] = {{"type", "Unigram"}, {"vocab", Json::array()}};
  EXPECT_NE(loadError(unigram).find("model.vocab: expected a non-empty list of [piece, score]"),
            std::string::npos);
  // (Built as arrays: a list of two-element lists would read as an object.)
  unigram["model"]["vocab"] = Json::array({Json::array({"<unk>", 0.0}), Json::array({"a", "high"})});
  EXPECT_NE(loadError(unigram).find("model.vocab[1]: expected [piece, score]"), std::string::npos);
  unigram["model"]["vocab"] = Json::array({Json::array({"<unk>", 0.0})});
  unigram["model"]["unk_id"] = 1;
  EXPECT_NE(loadError(unigram).find("model.unk_id: expected an index into the vocabulary (1 pieces)"),
            std::string::npos);

  Json precompiled = wordLevel({"<unk>"});
  precompiled["normalizer"] = {{"type", "Sequence"},
                               {"normalizers", {{{"type", "NFC"}}, {{"type", "Precompiled"}}}}};
  EXPECT_NE(loadError(precompiled).find("normalizer.normalizers[1]: normalizer type 'Precompiled'"),
            std::string::npos);

  Json badMerge = byteLevelBpe();
  badMerge["model"]["merges"] = Json::array({Json::array({"a", "zz"})});
  EXPECT_NE(loadError(badMerge).find("model.merges[0]: 'zz' is not in the vocabulary"),
            std::string::npos);

  Json badPattern = wordLevel({"<unk>"});
  badPattern["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}},
                                 {"behavior", "Isolated"}, {"invert", false}};
  EXPECT_NE(loadError(badPattern).find("pre_tokenizer.pattern.Regex: pattern does not compile"),
            std::string::npos);

  try {
    kiln::Tokenizer missing("/nonexistent/tokenizer.json");
    ADD_FAILURE() << "loaded a missing file";
  } catch (const kiln::Error &e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tokenizer.json: cannot open"),
              std::string::npos);
  }

  TempTokenizer file(byteLevelBpe());
  kiln::Tokenizer loaded(file.path());
  try {
    loaded.encode("a\xC3(");
    ADD_FAILURE() << "encoded invalid UTF-8";
  } catch (const kiln::Error &e) {
    EXPECT_EQ(e.code(), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("not valid UTF-8 at byte 1"), std::string::npos);
  }
  try {
    loaded.decode({0, 99});
    ADD_FAILURE() << "decoded an id outside the vocabulary";
  } catch (const kiln::Error &e) {
    EXPECT_NE(std::string(e.what()).find("token id 99 is not in the vocabulary"),
              std::string::npos);
  }
}

TEST(TokenizerTest, CApiRefusesNullArguments) {
  kiln_tokenizer_t *tokenizer = nullptr;
  kiln_status_t status = kiln_tokenizer_load(nullptr, &tokenizer);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(kiln_status_message(status), "kiln_tokenizer_load: path is NULL");
  kiln_status_free(status);

  TempTokenizer file(byteLevelBpe());
  ASSERT_EQ(kiln_tokenizer_load(file.path().c_str(), &tokenizer), nullptr);
  kiln_token_ids_t ids = {};
  status = kiln_tokenizer_encode(tokenizer, nullptr, 3, 1, &ids);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INVALID_ARGUMENT);
  kiln_status_free(status);
  // An empty text is fine, and gives no ids.
  ASSERT_EQ(kiln_tokenizer_encode(tokenizer, nullptr, 0, 1, &ids), nullptr);
  EXPECT_EQ(ids.count, 0u);
  kiln_token_ids_free(&ids);
  kiln_detokenizer_t *detokenizer = nullptr;
  int32_t badContext = 1000;
  status = kiln_detokenizer_create(tokenizer, &badContext, 1, 0, &detokenizer);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(detokenizer, nullptr);
  kiln_status_free(status);
  kiln_tokenizer_release(tokenizer);
}

} // namespace
