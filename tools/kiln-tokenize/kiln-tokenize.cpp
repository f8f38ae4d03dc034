//===- kiln-tokenize.cpp - The tokenizer from the shell --------------------===//
//
//   kiln-tokenize TOKENIZER                 text on stdin -> JSON ids
//   kiln-tokenize TOKENIZER --decode        ids on stdin  -> JSON string
//   kiln-tokenize TOKENIZER --decode --stream
//                                           ids -> JSON list of the pieces a
//                                           streaming decode emits, one id at
//                                           a time
//   kiln-tokenize TOKENIZER --pair          a JSON list [text, pair] on stdin
//                                           -> {"ids": [...], "type_ids": [...]}
//                                           of the two joined by the
//                                           post-processor
//   kiln-tokenize TOKENIZER --chat          a JSON context on stdin
//                                           ({"messages": [...],
//                                           "add_generation_prompt": true})
//                                           -> the chat template's text
//   --lines       one JSON value a line (a string to encode, a pair, a list
//                 of ids to decode, a context to render), one JSON result a
//                 line
//   --no-special-tokens    encode without the post-processor's BOS/CLS/SEP
//   --skip-special-tokens  decode without special tokens
//
// TOKENIZER is a tokenizer.json or a directory holding one. Errors name the
// culprit (and the line, with --lines) and exit 1.
//
//===----------------------------------------------------------------------===//
#include "kiln/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

namespace {

using Json = nlohmann::json;

struct Options {
  std::string tokenizerPath;
  bool decode = false, stream = false, lines = false, chat = false, pair = false;
  bool addSpecialTokens = true, skipSpecialTokens = false;
};

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "kiln-tokenize: error: %s\n", message.c_str());
  std::exit(1);
}

void usage() {
  std::printf("usage: kiln-tokenize TOKENIZER [--decode [--stream] | --pair | --chat]\n"
              "                     [--lines] [--no-special-tokens] [--skip-special-tokens]\n"
              "Encodes the text on stdin to token ids, or with --pair the JSON\n"
              "list [text, pair] on stdin to ids and type ids, or with --decode the\n"
              "ids on stdin to text, or with --chat renders the chat template over\n"
              "the JSON context on stdin, and prints the result as JSON.\n");
}

// Ids as a JSON list, or as numbers separated by commas or whitespace.
std::vector<int32_t> parseIds(const std::string &text) {
  std::vector<int32_t> ids;
  std::string trimmed = text;
  trimmed.erase(0, trimmed.find_first_not_of(" \t\r\n"));
  Json list;
  if (!trimmed.empty() && trimmed[0] == '[') {
    list = Json::parse(trimmed, nullptr, false);
    if (list.is_discarded() || !list.is_array())
      throw std::runtime_error("expected a JSON list of ids");
  } else {
    std::string spaced = trimmed;
    for (char &c : spaced)
      if (c == ',')
        c = ' ';
    std::istringstream in(spaced);
    std::string word;
    while (in >> word)
      list.push_back(Json::parse(word, nullptr, false));
  }
  for (const Json &id : list) {
    if (!id.is_number_integer() || id.get<int64_t>() < INT32_MIN ||
        id.get<int64_t>() > INT32_MAX)
      throw std::runtime_error("expected integer ids, got " + id.dump());
    ids.push_back(id.get<int32_t>());
  }
  return ids;
}

// One input (text to encode, or ids to decode) to its JSON result.
Json run(const kiln::Tokenizer &tokenizer, const Options &options, const Json &input) {
  if (options.chat)
    return tokenizer.applyChatTemplate(input.is_string() ? input.get<std::string>() : input.dump());
  if (options.pair) {
    Json texts = input.is_string() ? Json::parse(input.get<std::string>(), nullptr, false) : input;
    if (!texts.is_array() || texts.size() != 2 || !texts[0].is_string() || !texts[1].is_string())
      throw std::runtime_error("expected a JSON list of two strings, [text, pair]");
    kiln::Tokenizer::Encoding encoding = tokenizer.encodePair(
        texts[0].get<std::string>(), texts[1].get<std::string>(), options.addSpecialTokens);
    return Json{{"ids", encoding.ids}, {"type_ids", encoding.typeIds}};
  }
  if (!options.decode) {
    if (!input.is_string())
      throw std::runtime_error("expected a JSON string to encode");
    return tokenizer.encode(input.get<std::string>(), options.addSpecialTokens);
  }
  std::vector<int32_t> ids = input.is_string() ? parseIds(input.get<std::string>())
                                               : parseIds(input.dump());
  if (!options.stream)
    return tokenizer.decode(ids, options.skipSpecialTokens);
  kiln::Detokenizer detokenizer(tokenizer, {}, options.skipSpecialTokens);
  Json pieces = Json::array();
  for (int32_t id : ids)
    pieces.push_back(detokenizer.push(id));
  pieces.push_back(detokenizer.finish());
  return pieces;
}

// Invalid UTF-8 in a decoded text cannot occur (decoding replaces it), but a
// dump must never throw on it either.
std::string dump(const Json &value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else if (arg == "--decode") {
      options.decode = true;
    } else if (arg == "--pair") {
      options.pair = true;
    } else if (arg == "--chat") {
      options.chat = true;
    } else if (arg == "--stream") {
      options.stream = true;
    } else if (arg == "--lines") {
      options.lines = true;
    } else if (arg == "--no-special-tokens") {
      options.addSpecialTokens = false;
    } else if (arg == "--skip-special-tokens") {
      options.skipSpecialTokens = true;
    } else if (!arg.empty() && arg[0] == '-') {
      fail("unknown flag '" + arg + "' (see --help)");
    } else if (options.tokenizerPath.empty()) {
      options.tokenizerPath = arg;
    } else {
      fail("unexpected argument '" + arg + "'");
    }
  }
  if (options.tokenizerPath.empty())
    fail("no tokenizer given (see --help)");
  if (options.stream && !options.decode)
    fail("--stream goes with --decode");
  if (options.chat + options.decode + options.pair > 1)
    fail("--chat, --decode and --pair exclude each other");

  try {
    kiln::Tokenizer tokenizer(options.tokenizerPath);
    if (!options.lines) {
      std::string input((std::istreambuf_iterator<char>(std::cin)),
                        std::istreambuf_iterator<char>());
      std::printf("%s\n", dump(run(tokenizer, options, Json(input))).c_str());
      return 0;
    }
    std::string line;
    for (size_t number = 1; std::getline(std::cin, line); ++number) {
      Json input = Json::parse(line, nullptr, false);
      try {
        if (input.is_discarded())
          throw std::runtime_error("not JSON");
        std::printf("%s\n", dump(run(tokenizer, options, input)).c_str());
      } catch (const std::exception &e) {
        fail("stdin line " + std::to_string(number) + ": " + e.what());
      }
    }
  } catch (const std::exception &e) {
    fail(e.what());
  }
  return 0;
}
