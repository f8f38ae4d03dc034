//===- ChatTemplate.cpp - A Jinja subset with jinja2's semantics ----------===//
//
// Source -> tokens (jinja2's lexer rules, with trim_blocks and
// lstrip_blocks) -> an AST (jinja2's grammar and operator precedence) ->
// rendered by walking the tree. Values follow Python's rules, since a
// template's output depends on them: str() of None is "None", a list prints
// as its repr, `+` does not turn numbers into text, dicts keep their order.
//
//===----------------------------------------------------------------------===//
#include "ChatTemplate.h"
#include "TokenizerError.h"
#include "Unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>

namespace kiln::tok {

using OrderedJson = nlohmann::ordered_json;

namespace {

//===----------------------------------------------------------------------===//
// Limits. A template comes with a model and its context from a request; a
// bad one of either must fail cleanly instead of exhausting the stack, the
// memory or the CPU.
//===----------------------------------------------------------------------===//

// Nested evaluations (expressions, statements and macro calls together):
// Python's own recursion limit stops jinja2 at about this depth too.
constexpr int kMaxDepth = 500;
// Nesting of values (in the context, or built by a template) that printing,
// comparing and converting walk recursively.
constexpr int kMaxValueDepth = 200;
// Loop iterations and macro calls in one render.
constexpr size_t kMaxSteps = 10'000'000;
// Bytes of any one string or of the output, items of any one list.
constexpr size_t kMaxSize = size_t(1) << 28;
// jinja2's sandbox refuses bigger ranges (MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

// A run-time error that the innermost expression or statement around it
// turns into a TokenizerError naming its line and column.
struct RenderError {
  std::string message;
};

// raise_exception(message): the message is the whole error, for the caller
// to show the user as transformers does.
struct RaisedError {
  std::string message;
};

[[noreturn]] void fail(std::string message) { throw RenderError{std::move(message)}; }

// Source positions are byte offsets into the normalized source; errors turn
// them into line:column (columns counted in characters, from 1).
std::string describePosition(const std::string &source, size_t offset) {
  size_t line = 1, lineStart = 0;
  for (size_t i = 0; i < offset && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      lineStart = i + 1;
    }
  }
  size_t column = 1;
  for (size_t i = lineStart; i < offset && i < source.size(); i += utf8Length(source[i]))
    ++column;
  return "chat template " + std::to_string(line) + ":" + std::to_string(column) + ": ";
}

//===----------------------------------------------------------------------===//
// Text helpers (Python's str semantics on UTF-8)
//===----------------------------------------------------------------------===//

// str.isspace(): Unicode White_Space plus the information separators.
bool isPySpace(char32_t c) { return isWhitespace(c) || (c >= 0x1C && c <= 0x1F); }

std::vector<char32_t> codePoints(std::string_view text) {
  std::vector<char32_t> out;
  for (size_t pos = 0, length; pos < text.size(); pos += length)
    out.push_back(codePointAt(text, pos, length));
  return out;
}

std::string fromCodePoints(const std::vector<char32_t> &chars) {
  std::string out;
  for (char32_t c : chars)
    appendUtf8(out, c);
  return out;
}

size_t countCodePoints(std::string_view text) {
  size_t n = 0;
  for (char c : text)
    n += ((unsigned char)c & 0xC0) != 0x80;
  return n;
}

bool isCased(char32_t c) {
  auto cat = utf8proc_category((utf8proc_int32_t)c);
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}
char32_t toUpper(char32_t c) { return (char32_t)utf8proc_toupper((utf8proc_int32_t)c); }
char32_t toLower(char32_t c) { return (char32_t)utf8proc_tolower((utf8proc_int32_t)c); }
char32_t toTitle(char32_t c) { return (char32_t)utf8proc_totitle((utf8proc_int32_t)c); }

// Case mappings are Unicode's simple (one-to-one) ones: Python's full
// mappings differ only for a few characters such as 'ß'.upper() == 'SS'.
std::string mapChars(std::string_view text, char32_t (*map)(char32_t)) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0, length; pos < text.size(); pos += length)
    appendUtf8(out, map(codePointAt(text, pos, length)));
  return out;
}

// str.capitalize(): the first character in title case, the rest lower.
std::string capitalize(std::string_view text) {
  std::string out;
  for (size_t pos = 0, length; pos < text.size(); pos += length) {
    char32_t c = codePointAt(text, pos, length);
    appendUtf8(out, pos == 0 ? toTitle(c) : toLower(c));
  }
  return out;
}

// str.title(): a character after a cased one goes lower, any other title.
std::string pyTitle(std::string_view text) {
  std::string out;
  bool previousCased = false;
  for (size_t pos = 0, length; pos < text.size(); pos += length) {
    char32_t c = codePointAt(text, pos, length);
    c = previousCased ? toLower(c) : toTitle(c);
    previousCased = isCased(c);
    appendUtf8(out, c);
  }
  return out;
}

// jinja2's title filter, unlike str.title(), starts words only after
// whitespace, '-', '(', '{', '[' or '<', and upper-cases their first letter.
std::string jinjaTitle(std::string_view text) {
  std::string out;
  bool wordStart = true;
  for (size_t pos = 0, length; pos < text.size(); pos += length) {
    char32_t c = codePointAt(text, pos, length);
    bool separator = isPySpace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    appendUtf8(out, separator ? c : wordStart ? toUpper(c) : toLower(c));
    wordStart = separator;
  }
  return out;
}

// str.strip/lstrip/rstrip: `chars` empty means whitespace.
std::string pyStrip(std::string_view text, const std::optional<std::string> &chars, bool left,
                    bool right) {
  std::vector<char32_t> set = chars ? codePoints(*chars) : std::vector<char32_t>{};
  auto strippable = [&](char32_t c) {
    return chars ? std::find(set.begin(), set.end(), c) != set.end() : isPySpace(c);
  };
  size_t begin = 0, end = text.size();
  if (left) {
    for (size_t length; begin < end; begin += length)
      if (!strippable(codePointAt(text, begin, length)))
        break;
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;
      while (((unsigned char)text[start] & 0xC0) == 0x80)
        --start;
      size_t length;
      if (!strippable(codePointAt(text, start, length)))
        break;
      end = start;
    }
  }
  return std::string(text.substr(begin, end - begin));
}

// str.splitlines(): the line boundaries Python recognizes, "\r\n" as one.
std::vector<std::string> splitLines(std::string_view text) {
  std::vector<std::string> lines;
  size_t lineStart = 0;
  for (size_t pos = 0, length; pos < text.size(); pos += length) {
    char32_t c = codePointAt(text, pos, length);
    bool boundary = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
                    c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!boundary)
      continue;
    lines.emplace_back(text.substr(lineStart, pos - lineStart));
    if (c == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n')
      ++length;
    lineStart = pos + length;
  }
  if (lineStart < text.size())
    lines.emplace_back(text.substr(lineStart));
  return lines;
}

void appendHex(std::string &out, const char *prefix, uint32_t value, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%s%0*x", prefix, digits, value);
  out += buffer;
}

// repr() of a str: single quotes unless the text holds one and no double
// quote; non-printable characters escaped as Python escapes them.
std::string pyQuote(std::string_view text) {
  char quote = text.find('\'') != std::string_view::npos && text.find('"') == std::string_view::npos
                   ? '"'
                   : '\'';
  std::string out(1, quote);
  for (size_t pos = 0, length; pos < text.size(); pos += length) {
    char32_t c = codePointAt(text, pos, length);
    if (c == (char32_t)quote || c == '\\') {
      out += '\\';
      out += (char)c;
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      appendHex(out, "\\x", c, 2);
    } else if (c < 0x80) {
      out += (char)c;
    } else {
      auto cat = utf8proc_category((utf8proc_int32_t)c);
      bool printable = cat != UTF8PROC_CATEGORY_CC && cat != UTF8PROC_CATEGORY_CF &&
                       cat != UTF8PROC_CATEGORY_CS && cat != UTF8PROC_CATEGORY_CO &&
                       cat != UTF8PROC_CATEGORY_CN && cat != UTF8PROC_CATEGORY_ZL &&
                       cat != UTF8PROC_CATEGORY_ZP && cat != UTF8PROC_CATEGORY_ZS;
      if (printable)
        out.append(text.substr(pos, length));
      else if (c <= 0xFF)
        appendHex(out, "\\x", c, 2);
      else if (c <= 0xFFFF)
        appendHex(out, "\\u", c, 4);
      else
        appendHex(out, "\\U", c, 8);
    }
  }
  out += quote;
  return out;
}

// repr() of a float (also what json.dumps writes): the shortest digits that
// round-trip, in positional notation for exponents -4 to 15, else
// scientific with a signed, at least two-digit exponent.
std::string pyFloat(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  std::string scientific(buffer, result.ptr);
  size_t e = scientific.find('e');
  std::string sign, digits;
  for (size_t i = 0; i < e; ++i) {
    if (scientific[i] == '-')
      sign = "-";
    else if (scientific[i] != '.')
      digits += scientific[i];
  }
  int exponent = std::stoi(scientific.substr(e + 1));
  std::string out = sign;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(-exponent - 1, '0') + digits;
    } else if ((size_t)exponent + 1 >= digits.size()) {
      out += digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1)
    out += "." + digits.substr(1);
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp;
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

class Value;
class Interpreter;
using List = std::vector<Value>;

// A Python dict with string keys, in insertion order. Chat-template dicts
// are small, so lookups scan.
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value *find(std::string_view key) const;
  void set(const std::string &key, Value value);
};

// An object with attributes but no mapping behaviour: a namespace() (whose
// attributes `set ns.x = ...` changes) or a for loop's `loop`.
struct Object {
  bool isNamespace;
  Dict attributes;
};

struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct Function {
  std::string name;
  std::function<Value(Interpreter &, const Args &)> call;
};

class Value {
public:
  enum class Kind : uint8_t {
    Undefined,
    None,
    Bool,
    Int,
    Float,
    String,
    List,
    Dict,
    Object,
    Function
  };

  // Undefined: jinja2's default Undefined, which renders as "" and is false,
  // but fails with its message when used further (called, indexed, added).
  static Value undefined(std::string message) {
    Value v(Kind::Undefined);
    v.text_ = std::make_shared<const std::string>(std::move(message));
    return v;
  }
  static Value none() { return Value(Kind::None); }
  static Value boolean(bool b) {
    Value v(Kind::Bool);
    v.int_ = b;
    return v;
  }
  static Value integer(int64_t i) {
    Value v(Kind::Int);
    v.int_ = i;
    return v;
  }
  static Value number(double f) {
    Value v(Kind::Float);
    v.float_ = f;
    return v;
  }
  static Value string(std::string s) {
    if (s.size() > kMaxSize)
      fail("string too long");
    Value v(Kind::String);
    v.text_ = std::make_shared<const std::string>(std::move(s));
    return v;
  }
  static Value list(List items, bool tuple = false) {
    if (items.size() > kMaxSize)
      fail("list too long");
    Value v(Kind::List);
    v.tuple_ = tuple;
    v.list_ = std::make_shared<const List>(std::move(items));
    return v;
  }
  static Value dict(Dict d) {
    Value v(Kind::Dict);
    v.dict_ = std::make_shared<const Dict>(std::move(d));
    return v;
  }
  static Value object(bool isNamespace, Dict attributes) {
    Value v(Kind::Object);
    v.object_ = std::make_shared<Object>(Object{isNamespace, std::move(attributes)});
    return v;
  }
  static Value function(std::string name, std::function<Value(Interpreter &, const Args &)> call) {
    Value v(Kind::Function);
    v.function_ = std::make_shared<const Function>(Function{std::move(name), std::move(call)});
    return v;
  }

  Kind kind() const { return kind_; }
  bool is(Kind k) const { return kind_ == k; }
  bool isTuple() const { return tuple_; }
  bool isNumber() const {
    return kind_ == Kind::Bool || kind_ == Kind::Int || kind_ == Kind::Float;
  }
  bool asBool() const { return int_ != 0; }
  int64_t asInt() const { return int_; } // Bool or Int
  double asDouble() const { return kind_ == Kind::Float ? float_ : (double)int_; }
  const std::string &str() const { return *text_; }
  const std::string &undefinedMessage() const { return *text_; }
  const List &items() const { return *list_; }
  const Dict &dict() const { return *dict_; }
  Object &object() const { return *object_; }
  const Function &function() const { return *function_; }
  // Identity, for `is sameas` and for equality of objects and functions.
  const void *identity() const {
    return list_     ? (const void *)list_.get()
           : dict_   ? (const void *)dict_.get()
           : object_ ? (const void *)object_.get()
                     : (const void *)function_.get();
  }

private:
  explicit Value(Kind kind) : kind_(kind) {}

  Kind kind_;
  bool tuple_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::shared_ptr<const std::string> text_; // String, or Undefined's message
  std::shared_ptr<const List> list_;
  std::shared_ptr<const Dict> dict_;
  std::shared_ptr<Object> object_;
  std::shared_ptr<const Function> function_;
};

const Value *Dict::find(std::string_view key) const {
  for (const auto &[k, v] : items)
    if (k == key)
      return &v;
  return nullptr;
}

void Dict::set(const std::string &key, Value value) {
  for (auto &[k, v] : items) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

// The type names Python's error messages use.
std::string typeName(const Value &v) {
  switch (v.kind()) {
  case Value::Kind::Undefined:
    return "Undefined";
  case Value::Kind::None:
    return "NoneType";
  case Value::Kind::Bool:
    return "bool";
  case Value::Kind::Int:
    return "int";
  case Value::Kind::Float:
    return "float";
  case Value::Kind::String:
    return "str";
  case Value::Kind::List:
    return v.isTuple() ? "tuple" : "list";
  case Value::Kind::Dict:
    return "dict";
  case Value::Kind::Object:
    return v.object().isNamespace ? "Namespace" : "LoopContext";
  case Value::Kind::Function:
    return "function";
  }
  return "object";
}

// Using an undefined value any further than testing or printing it fails
// with its message, as jinja2's Undefined does.
void requireDefined(const Value &v) {
  if (v.is(Value::Kind::Undefined))
    fail(v.undefinedMessage());
}

class DepthCounter {
public:
  explicit DepthCounter(int &depth) : depth_(depth) {
    if (++depth_ > kMaxValueDepth) {
      --depth_;
      fail("value nested too deeply");
    }
  }
  ~DepthCounter() { --depth_; }

private:
  int &depth_;
};

bool truthy(const Value &v) {
  switch (v.kind()) {
  case Value::Kind::Undefined:
  case Value::Kind::None:
    return false;
  case Value::Kind::Bool:
  case Value::Kind::Int:
    return v.asInt() != 0;
  case Value::Kind::Float:
    return v.asDouble() != 0;
  case Value::Kind::String:
    return !v.str().empty();
  case Value::Kind::List:
    return !v.items().empty();
  case Value::Kind::Dict:
    return !v.dict().items.empty();
  case Value::Kind::Object:
  case Value::Kind::Function:
    return true;
  }
  return true;
}

void appendRepr(std::string &out, const Value &v, int &depth);

// str(): what {{ }}, `~`, join and the string filter print.
void appendStr(std::string &out, const Value &v, int &depth) {
  switch (v.kind()) {
  case Value::Kind::Undefined:
    return;
  case Value::Kind::String:
    out += v.str();
    return;
  default:
    appendRepr(out, v, depth);
  }
}

std::string toStr(const Value &v) {
  if (v.is(Value::Kind::String))
    return v.str();
  std::string out;
  int depth = 0;
  appendStr(out, v, depth);
  return out;
}

void appendRepr(std::string &out, const Value &v, int &depth) {
  switch (v.kind()) {
  case Value::Kind::Undefined:
    out += "Undefined";
    return;
  case Value::Kind::None:
    out += "None";
    return;
  case Value::Kind::Bool:
    out += v.asBool() ? "True" : "False";
    return;
  case Value::Kind::Int:
    out += std::to_string(v.asInt());
    return;
  case Value::Kind::Float:
    out += pyFloat(v.asDouble());
    return;
  case Value::Kind::String:
    out += pyQuote(v.str());
    return;
  case Value::Kind::List: {
    DepthCounter guard(depth);
    out += v.isTuple() ? '(' : '[';
    const List &items = v.items();
    for (size_t i = 0; i < items.size(); ++i) {
      if (i)
        out += ", ";
      appendRepr(out, items[i], depth);
    }
    out += v.isTuple() ? (items.size() == 1 ? ",)" : ")") : "]";
    return;
  }
  case Value::Kind::Dict: {
    DepthCounter guard(depth);
    out += '{';
    bool first = true;
    for (const auto &[key, value] : v.dict().items) {
      if (!first)
        out += ", ";
      first = false;
      out += pyQuote(key) + ": ";
      appendRepr(out, value, depth);
    }
    out += '}';
    return;
  }
  case Value::Kind::Object: {
    const Object &object = v.object();
    if (!object.isNamespace) {
      out += "<LoopContext " + toStr(*object.attributes.find("index")) + "/" +
             toStr(*object.attributes.find("length")) + ">";
      return;
    }
    out += "<Namespace ";
    appendRepr(out, Value::dict(object.attributes), depth);
    out += '>';
    return;
  }
  case Value::Kind::Function:
    out += "<function " + v.function().name + ">";
    return;
  }
}

std::string repr(const Value &v) {
  std::string out;
  int depth = 0;
  appendRepr(out, v, depth);
  return out;
}

// Python's ==: numbers by value across bool/int/float, sequences and dicts
// by content (a tuple never equals a list), two Undefineds are equal.
bool equals(const Value &a, const Value &b, int &depth) {
  if (a.isNumber() && b.isNumber()) {
    if (a.is(Value::Kind::Float) || b.is(Value::Kind::Float))
      return a.asDouble() == b.asDouble();
    return a.asInt() == b.asInt();
  }
  if (a.kind() != b.kind())
    return false;
  switch (a.kind()) {
  case Value::Kind::Undefined:
  case Value::Kind::None:
    return true;
  case Value::Kind::String:
    return a.str() == b.str();
  case Value::Kind::List: {
    if (a.isTuple() != b.isTuple() || a.items().size() != b.items().size())
      return false;
    DepthCounter guard(depth);
    for (size_t i = 0; i < a.items().size(); ++i)
      if (!equals(a.items()[i], b.items()[i], depth))
        return false;
    return true;
  }
  case Value::Kind::Dict: {
    if (a.dict().items.size() != b.dict().items.size())
      return false;
    DepthCounter guard(depth);
    for (const auto &[key, value] : a.dict().items) {
      const Value *other = b.dict().find(key);
      if (!other || !equals(value, *other, depth))
        return false;
    }
    return true;
  }
  default:
    return a.identity() == b.identity();
  }
}

bool equals(const Value &a, const Value &b) {
  int depth = 0;
  return equals(a, b, depth);
}

// Python's < for the types that order: numbers, strings (UTF-8 byte order
// is code point order) and sequences of the same type.
bool less(const Value &a, const Value &b, int &depth) {
  requireDefined(a);
  requireDefined(b);
  if (a.isNumber() && b.isNumber()) {
    if (a.is(Value::Kind::Float) || b.is(Value::Kind::Float))
      return a.asDouble() < b.asDouble();
    return a.asInt() < b.asInt();
  }
  if (a.is(Value::Kind::String) && b.is(Value::Kind::String))
    return a.str() < b.str();
  if (a.is(Value::Kind::List) && b.is(Value::Kind::List) && a.isTuple() == b.isTuple()) {
    DepthCounter guard(depth);
    const List &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i], depth))
        return less(x[i], y[i], depth);
    }
    return x.size() < y.size();
  }
  fail("'<' not supported between instances of '" + typeName(a) + "' and '" + typeName(b) + "'");
}

bool less(const Value &a, const Value &b) {
  int depth = 0;
  return less(a, b, depth);
}

// Iterating: a list's items, a string's characters, a dict's keys, nothing
// for Undefined.
List iterate(const Value &v) {
  switch (v.kind()) {
  case Value::Kind::Undefined:
    return {};
  case Value::Kind::List:
    return v.items();
  case Value::Kind::String: {
    List chars;
    const std::string &text = v.str();
    for (size_t pos = 0, length; pos < text.size(); pos += length) {
      codePointAt(text, pos, length);
      chars.push_back(Value::string(text.substr(pos, length)));
    }
    return chars;
  }
  case Value::Kind::Dict: {
    List keys;
    for (const auto &item : v.dict().items)
      keys.push_back(Value::string(item.first));
    return keys;
  }
  default:
    fail("'" + typeName(v) + "' object is not iterable");
  }
}

int64_t length(const Value &v) {
  switch (v.kind()) {
  case Value::Kind::Undefined:
    return 0;
  case Value::Kind::String:
    return (int64_t)countCodePoints(v.str());
  case Value::Kind::List:
    return (int64_t)v.items().size();
  case Value::Kind::Dict:
    return (int64_t)v.dict().items.size();
  default:
    fail("object of type '" + typeName(v) + "' has no len()");
  }
}

bool contains(const Value &container, const Value &item) {
  switch (container.kind()) {
  case Value::Kind::Undefined:
    return false;
  case Value::Kind::String:
    if (!item.is(Value::Kind::String))
      fail("'in <string>' requires string as left operand, not " + typeName(item));
    return container.str().find(item.str()) != std::string::npos;
  case Value::Kind::List:
    return std::any_of(container.items().begin(), container.items().end(),
                       [&](const Value &v) { return equals(v, item); });
  case Value::Kind::Dict:
    return item.is(Value::Kind::String) && container.dict().find(item.str());
  default:
    fail("argument of type '" + typeName(container) + "' is not iterable");
  }
}

//===----------------------------------------------------------------------===//
// JSON: the context in, and transformers' tojson out
//===----------------------------------------------------------------------===//

// A context value that cannot become a template value, with the path to it
// filled in as the error unwinds.
struct ContextError {
  std::string path, message;
};

Value fromJson(const OrderedJson &json, int depth) {
  if (depth > kMaxValueDepth)
    throw ContextError{"", "nested too deeply"};
  switch (json.type()) {
  case OrderedJson::value_t::null:
    return Value::none();
  case OrderedJson::value_t::boolean:
    return Value::boolean(json.get<bool>());
  case OrderedJson::value_t::number_integer:
    return Value::integer(json.get<int64_t>());
  case OrderedJson::value_t::number_unsigned: {
    uint64_t u = json.get<uint64_t>();
    if (u > (uint64_t)INT64_MAX)
      throw ContextError{"", "integer " + std::to_string(u) + " is out of range"};
    return Value::integer((int64_t)u);
  }
  case OrderedJson::value_t::number_float:
    return Value::number(json.get<double>());
  case OrderedJson::value_t::string: {
    const std::string &text = json.get_ref<const std::string &>();
    size_t bad = firstInvalidUtf8(text);
    if (bad != text.size())
      throw ContextError{"", "invalid UTF-8 at byte " + std::to_string(bad)};
    return Value::string(text);
  }
  case OrderedJson::value_t::array: {
    List items;
    for (size_t i = 0; i < json.size(); ++i) {
      try {
        items.push_back(fromJson(json[i], depth + 1));
      } catch (ContextError &e) {
        e.path = "[" + std::to_string(i) + "]" + e.path;
        throw;
      }
    }
    return Value::list(std::move(items));
  }
  case OrderedJson::value_t::object: {
    Dict dict;
    for (const auto &[key, value] : json.items()) {
      if (firstInvalidUtf8(key) != key.size())
        throw ContextError{"", "a key is not valid UTF-8"};
      try {
        dict.items.emplace_back(key, fromJson(value, depth + 1));
      } catch (ContextError &e) {
        e.path = "." + key + e.path;
        throw;
      }
    }
    return Value::dict(std::move(dict));
  }
  default:
    throw ContextError{"", "unsupported JSON value"};
  }
}

struct JsonStyle {
  std::optional<std::string> indent; // none: all on one line
  std::string itemSeparator, keySeparator;
  bool sortKeys = false, ensureAscii = false;
};

// json.dumps's string encoding: quotes, backslashes and control characters
// escaped; with ensure_ascii, everything past ASCII as \uXXXX (surrogate
// pairs beyond the BMP).
void appendJsonString(std::string &out, std::string_view text, bool ensureAscii) {
  out += '"';
  for (size_t pos = 0, length; pos < text.size(); pos += length) {
    char32_t c = codePointAt(text, pos, length);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (c < 0x20) {
        appendHex(out, "\\u", c, 4);
      } else if (c < 0x80 || !ensureAscii) {
        out.append(text.substr(pos, length));
      } else if (c < 0x10000) {
        appendHex(out, "\\u", c, 4);
      } else {
        appendHex(out, "\\u", 0xD800 + ((c - 0x10000) >> 10), 4);
        appendHex(out, "\\u", 0xDC00 + ((c - 0x10000) & 0x3FF), 4);
      }
    }
  }
  out += '"';
}

void appendJson(std::string &out, const Value &v, const JsonStyle &style, int depth) {
  if (depth > kMaxValueDepth)
    fail("value nested too deeply for tojson");
  auto newline = [&](int level) {
    if (!style.indent)
      return;
    out += '\n';
    for (int i = 0; i < level; ++i)
      out += *style.indent;
  };
  switch (v.kind()) {
  case Value::Kind::None:
    out += "null";
    return;
  case Value::Kind::Bool:
    out += v.asBool() ? "true" : "false";
    return;
  case Value::Kind::Int:
    out += std::to_string(v.asInt());
    return;
  case Value::Kind::Float: {
    double f = v.asDouble();
    out += std::isnan(f) ? "NaN" : std::isinf(f) ? (f < 0 ? "-Infinity" : "Infinity") : pyFloat(f);
    return;
  }
  case Value::Kind::String:
    appendJsonString(out, v.str(), style.ensureAscii);
    return;
  case Value::Kind::List: {
    const List &items = v.items();
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i)
        out += style.itemSeparator;
      newline(depth + 1);
      appendJson(out, items[i], style, depth + 1);
    }
    newline(depth);
    out += ']';
    return;
  }
  case Value::Kind::Dict: {
    std::vector<const std::pair<std::string, Value> *> items;
    for (const auto &item : v.dict().items)
      items.push_back(&item);
    if (items.empty()) {
      out += "{}";
      return;
    }
    if (style.sortKeys)
      std::stable_sort(items.begin(), items.end(),
                       [](const auto *a, const auto *b) { return a->first < b->first; });
    out += '{';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i)
        out += style.itemSeparator;
      newline(depth + 1);
      appendJsonString(out, items[i]->first, style.ensureAscii);
      out += style.keySeparator;
      appendJson(out, items[i]->second, style, depth + 1);
    }
    newline(depth);
    out += '}';
    return;
  }
  default:
    fail("Object of type " + typeName(v) + " is not JSON serializable");
  }
}

//===----------------------------------------------------------------------===//
// Lexer: jinja2's rules with trim_blocks and lstrip_blocks
//===----------------------------------------------------------------------===//

enum class TokenKind {
  Data,
  VariableBegin,
  VariableEnd,
  BlockBegin,
  BlockEnd,
  Name,
  String,
  Integer,
  Float,
  Operator,
  End
};

struct Token {
  TokenKind kind;
  std::string text; // data, name, decoded string, or operator
  size_t offset;
  int64_t integer = 0;
  double number = 0;
};

// A syntax error at `offset` of the (normalized) source.
struct SyntaxError {
  size_t offset;
  std::string message;
};

bool isNameStart(char c) { return std::isalpha((unsigned char)c) || c == '_'; }
bool isNameChar(char c) { return std::isalnum((unsigned char)c) || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isHexDigit(char c) { return std::isxdigit((unsigned char)c) != 0; }
bool isOctalDigit(char c) { return c >= '0' && c <= '7'; }
bool isBinaryDigit(char c) { return c == '0' || c == '1'; }

class Lexer {
public:
  explicit Lexer(const std::string &source) : src_(source) {}

  std::vector<Token> run() {
    bool lineStarting = true; // jinja2's line_starting: the last tag ended a line
    while (pos_ < src_.size()) {
      size_t tag = findTag(pos_);
      std::string_view text(src_.data() + pos_, tag - pos_);
      if (tag == src_.size()) {
        push(TokenKind::Data, std::string(text), pos_);
        break;
      }
      char kind = src_[tag + 1];
      char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+')
                      ? src_[tag + 2]
                      : 0;
      if (sign == '-') {
        text = rstripSpace(text);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: a block or comment tag alone on its line after
        // spaces and tabs takes them away.
        size_t lineStart = text.rfind('\n');
        lineStart = lineStart == std::string_view::npos ? 0 : lineStart + 1;
        if ((lineStart > 0 || lineStarting) &&
            text.find_first_not_of(" \t", lineStart) == std::string_view::npos)
          text = text.substr(0, lineStart);
      }
      if (!text.empty())
        push(TokenKind::Data, std::string(text), pos_);
      pos_ = tag + 2 + (sign ? 1 : 0);
      if (kind == '#')
        lexComment(tag);
      else
        lexTag(tag, kind == '%');
      lineStarting = src_[pos_ - 1] == '\n';
    }
    push(TokenKind::End, "", src_.size());
    return std::move(tokens_);
  }

private:
  [[noreturn]] void error(size_t offset, std::string message) {
    throw SyntaxError{offset, std::move(message)};
  }

  void push(TokenKind kind, std::string text, size_t offset) {
    tokens_.push_back(Token{kind, std::move(text), offset});
  }

  size_t findTag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    }
    return src_.size();
  }

  std::string_view rstripSpace(std::string_view text) const {
    std::string stripped = pyStrip(text, std::nullopt, false, true);
    return text.substr(0, stripped.size());
  }

  void skipSpace() {
    for (size_t length; pos_ < src_.size(); pos_ += length)
      if (!isPySpace(codePointAt(src_, pos_, length)))
        break;
  }

  // A comment ends at the first "#}"; "-#}" strips the whitespace after it,
  // and trim_blocks takes the newline after a plain "#}".
  void lexComment(size_t tag) {
    size_t end = src_.find("#}", pos_);
    if (end == std::string::npos)
      error(tag, "missing end of comment tag");
    char sign = end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
    pos_ = end + 2;
    if (sign == '-')
      skipSpace();
    else if (!sign && pos_ < src_.size() && src_[pos_] == '\n')
      ++pos_;
  }

  // The inside of a {% %} or {{ }} tag, up to and including its end.
  void lexTag(size_t tag, bool block) {
    push(block ? TokenKind::BlockBegin : TokenKind::VariableBegin, "", tag);
    if (block)
      refuseRaw(tag);
    std::vector<char> brackets; // closers expected, innermost last
    while (true) {
      if (brackets.empty() && lexTagEnd(block))
        return;
      if (pos_ >= src_.size())
        error(tag, std::string("unexpected end of template inside this tag, expected '") +
                       (block ? "%}" : "}}") + "'");
      size_t length;
      if (isPySpace(codePointAt(src_, pos_, length))) {
        pos_ += length;
        continue;
      }
      char c = src_[pos_];
      if (isNameStart(c)) {
        size_t start = pos_;
        while (pos_ < src_.size() && isNameChar(src_[pos_]))
          ++pos_;
        push(TokenKind::Name, src_.substr(start, pos_ - start), start);
      } else if (isDigit(c)) {
        lexNumber();
      } else if (c == '\'' || c == '"') {
        lexString();
      } else {
        lexOperator(brackets);
      }
    }
  }

  // {% raw %} switches jinja2's lexer off until {% endraw %}; refuse it here,
  // before its contents are read as template syntax.
  void refuseRaw(size_t tag) {
    size_t p = pos_;
    while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\n'))
      ++p;
    if (startsWith(p, "raw") && (p + 3 >= src_.size() || !isNameChar(src_[p + 3])))
      error(tag, "'raw' blocks are not supported");
  }

  bool startsWith(size_t at, std::string_view text) const {
    return std::string_view(src_).substr(std::min(at, src_.size())).substr(0, text.size()) == text;
  }

  bool lexTagEnd(bool block) {
    const char *close = block ? "%}" : "}}";
    size_t start = pos_;
    if (startsWith(pos_, "-") && startsWith(pos_ + 1, close)) {
      pos_ += 3;
      skipSpace();
    } else if (block && startsWith(pos_, "+") && startsWith(pos_ + 1, close)) {
      pos_ += 3;
    } else if (startsWith(pos_, close)) {
      pos_ += 2;
      if (block && pos_ < src_.size() && src_[pos_] == '\n') // trim_blocks
        ++pos_;
    } else {
      return false;
    }
    push(block ? TokenKind::BlockEnd : TokenKind::VariableEnd, "", start);
    return true;
  }

  // Digits with optional underscores between them.
  std::string digitRun(bool (*digit)(char)) {
    std::string digits;
    while (pos_ < src_.size()) {
      if (digit(src_[pos_]))
        digits += src_[pos_++];
      else if (src_[pos_] == '_' && !digits.empty() && pos_ + 1 < src_.size() &&
               digit(src_[pos_ + 1]))
        ++pos_;
      else
        break;
    }
    return digits;
  }

  void lexNumber() {
    size_t start = pos_;
    if (src_[pos_] == '0' && pos_ + 2 < src_.size() && std::strchr("xXoObB", src_[pos_ + 1])) {
      char prefix = (char)std::tolower(src_[pos_ + 1]);
      int base = prefix == 'x' ? 16 : prefix == 'o' ? 8 : 2;
      pos_ += 2;
      std::string digits = digitRun(prefix == 'x'   ? isHexDigit
                                    : prefix == 'o' ? isOctalDigit
                                                    : isBinaryDigit);
      if (digits.empty())
        error(start, "invalid number literal");
      pushInteger(digits, base, start);
      return;
    }
    std::string text = digitRun(isDigit);
    bool isFloat = false;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && isDigit(src_[pos_ + 1])) {
      ++pos_;
      text += "." + digitRun(isDigit);
      isFloat = true;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-'))
        ++p;
      if (p < src_.size() && isDigit(src_[p])) {
        text += 'e';
        text += src_.substr(pos_ + 1, p - pos_ - 1);
        pos_ = p;
        text += digitRun(isDigit);
        isFloat = true;
      }
    }
    if (!isFloat) {
      pushInteger(text, 10, start);
      return;
    }
    push(TokenKind::Float, text, start);
    tokens_.back().number = std::strtod(text.c_str(), nullptr);
  }

  void pushInteger(const std::string &digits, int base, size_t start) {
    int64_t value = 0;
    auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
    if (result.ec != std::errc())
      error(start, "integer literal too large");
    push(TokenKind::Integer, digits, start);
    tokens_.back().integer = value;
  }

  // A string literal, its escapes decoded as Python's unicode_escape does
  // (jinja2 decodes them so): an unknown escape keeps its backslash.
  void lexString() {
    size_t start = pos_;
    char quote = src_[pos_++];
    std::string text;
    while (true) {
      if (pos_ >= src_.size())
        error(start, "unterminated string literal");
      char c = src_[pos_++];
      if (c == quote)
        break;
      if (c != '\\') {
        text += c;
        continue;
      }
      if (pos_ >= src_.size())
        error(start, "unterminated string literal");
      char e = src_[pos_++];
      switch (e) {
      case '\n':
        break; // line continuation
      case '\\':
        text += '\\';
        break;
      case '\'':
        text += '\'';
        break;
      case '"':
        text += '"';
        break;
      case 'a':
        text += '\a';
        break;
      case 'b':
        text += '\b';
        break;
      case 'f':
        text += '\f';
        break;
      case 'n':
        text += '\n';
        break;
      case 'r':
        text += '\r';
        break;
      case 't':
        text += '\t';
        break;
      case 'v':
        text += '\v';
        break;
      case 'x':
        appendUtf8(text, hexEscape(2, start));
        break;
      case 'u':
        appendUtf8(text, hexEscape(4, start));
        break;
      case 'U':
        appendUtf8(text, hexEscape(8, start));
        break;
      case 'N':
        error(pos_ - 2, "\\N{...} escapes are not supported");
      default:
        if (e >= '0' && e <= '7') {
          char32_t code = e - '0';
          for (int i = 0; i < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7';
               ++i)
            code = code * 8 + (src_[pos_++] - '0');
          appendUtf8(text, code);
        } else {
          text += '\\';
          text += e;
        }
      }
    }
    push(TokenKind::String, std::move(text), start);
  }

  char32_t hexEscape(int digits, size_t start) {
    if (pos_ + digits > src_.size())
      error(start, "truncated escape in string literal");
    uint32_t code = 0;
    auto result = std::from_chars(src_.data() + pos_, src_.data() + pos_ + digits, code, 16);
    if (result.ptr != src_.data() + pos_ + digits)
      error(pos_ - 2, "truncated escape in string literal");
    if (code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
      error(pos_ - 2, "escape is not a Unicode scalar value");
    pos_ += digits;
    return code;
  }

  void lexOperator(std::vector<char> &brackets) {
    static const char *const operators[] = {"**", "//", "==", "!=", ">=", "<=", "+", "-", "/",
                                            "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                            ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};
    for (const char *op : operators) {
      size_t n = std::strlen(op);
      if (!startsWith(pos_, op))
        continue;
      char c = op[0];
      if (n == 1 && (c == '(' || c == '[' || c == '{')) {
        brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      } else if (n == 1 && (c == ')' || c == ']' || c == '}')) {
        if (brackets.empty())
          error(pos_, std::string("unexpected '") + c + "'");
        if (brackets.back() != c)
          error(pos_, std::string("unexpected '") + c + "', expected '" + brackets.back() + "'");
        brackets.pop_back();
      }
      push(TokenKind::Operator, op, pos_);
      pos_ += n;
      return;
    }
    size_t length;
    std::string c;
    appendUtf8(c, codePointAt(src_, pos_, length));
    error(pos_, "unexpected character '" + c + "'");
  }

  const std::string &src_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
};

//===----------------------------------------------------------------------===//
// Syntax tree and evaluation
//===----------------------------------------------------------------------===//

struct Scope;
using ScopePtr = std::shared_ptr<Scope>;

// Variables of one jinja2 frame: the template's top level, one iteration of
// a for loop, one macro call. Lookups fall through to the enclosing frame,
// so a loop body sees the outer variables but its `set`s stay inside (each
// iteration starts afresh, as jinja2's do).
struct Scope {
  explicit Scope(ScopePtr parent) : parent(std::move(parent)) {}
  const Value *find(std::string_view name) const {
    for (const Scope *s = this; s; s = s->parent.get())
      if (const Value *v = s->vars.find(name))
        return v;
    return nullptr;
  }
  ScopePtr parent;
  Dict vars;
};

struct Expr {
  explicit Expr(size_t offset) : offset(offset) {}
  virtual ~Expr() = default;
  virtual Value eval(Interpreter &in, const ScopePtr &scope) const = 0;
  size_t offset;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Argument {
  std::string keyword; // empty for a positional argument
  ExprPtr value;
};

// What a statement tells the loop around it.
enum class Flow { Normal, Break, Continue };

struct Stmt {
  explicit Stmt(size_t offset) : offset(offset) {}
  virtual ~Stmt() = default;
  virtual Flow render(Interpreter &in, const ScopePtr &scope, std::string &out) const = 0;
  size_t offset;
};
using Body = std::vector<std::unique_ptr<Stmt>>;

using FilterFn = Value (*)(Interpreter &, const Value &, const Args &);
using TestFn = bool (*)(Interpreter &, const Value &, const Args &);
const FilterFn *findFilter(std::string_view name);
const TestFn *findTest(std::string_view name);
Value getAttr(const Value &object, const std::string &name);
Value getItem(const Value &object, const Value &key);

class Interpreter {
public:
  explicit Interpreter(const std::string &source) : source_(source) {}

  Value eval(const Expr &e, const ScopePtr &scope) {
    try {
      Frame frame(*this);
      return e.eval(*this, scope);
    } catch (const RenderError &error) {
      throw TokenizerError(describePosition(source_, e.offset) + error.message);
    }
  }

  Flow render(const Body &body, const ScopePtr &scope, std::string &out) {
    for (const auto &stmt : body) {
      Flow flow;
      try {
        Frame frame(*this);
        flow = stmt->render(*this, scope, out);
      } catch (const RenderError &error) {
        throw TokenizerError(describePosition(source_, stmt->offset) + error.message);
      }
      if (out.size() > kMaxSize)
        throw TokenizerError("chat template output exceeds " + std::to_string(kMaxSize) + " bytes");
      if (flow != Flow::Normal)
        return flow;
    }
    return Flow::Normal;
  }

  Args evalArgs(const std::vector<Argument> &arguments, const ScopePtr &scope) {
    Args args;
    for (const Argument &a : arguments) {
      if (a.keyword.empty())
        args.positional.push_back(eval(*a.value, scope));
      else
        args.keyword.emplace_back(a.keyword, eval(*a.value, scope));
    }
    return args;
  }

  // A loop iteration or macro call.
  void step() {
    if (++steps_ > kMaxSteps)
      fail("template exceeded " + std::to_string(kMaxSteps) + " loop iterations and macro calls");
  }

private:
  // One nested evaluation, counted against kMaxDepth.
  class Frame {
  public:
    explicit Frame(Interpreter &in) : in_(in) {
      if (++in_.depth_ > kMaxDepth) {
        --in_.depth_;
        fail("nested too deeply (endless recursion?)");
      }
    }
    ~Frame() { --in_.depth_; }

  private:
    Interpreter &in_;
  };

  const std::string &source_;
  int depth_ = 0;
  size_t steps_ = 0;
};

Value callValue(Interpreter &in, const Value &callee, const Args &args) {
  if (callee.is(Value::Kind::Function))
    return callee.function().call(in, args);
  requireDefined(callee);
  fail("'" + typeName(callee) + "' object is not callable");
}

//===--- Expressions ---===//

struct ConstExpr : Expr {
  ConstExpr(size_t offset, Value value) : Expr(offset), value(std::move(value)) {}
  Value eval(Interpreter &, const ScopePtr &) const override { return value; }
  Value value;
};

const Value *findGlobal(std::string_view name);

struct NameExpr : Expr {
  NameExpr(size_t offset, std::string name) : Expr(offset), name(std::move(name)) {}
  Value eval(Interpreter &, const ScopePtr &scope) const override {
    if (const Value *v = scope->find(name))
      return *v;
    if (const Value *v = findGlobal(name))
      return *v;
    return Value::undefined("'" + name + "' is undefined");
  }
  std::string name;
};

struct ListExpr : Expr {
  ListExpr(size_t offset, std::vector<ExprPtr> items, bool tuple)
      : Expr(offset), items(std::move(items)), tuple(tuple) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    List values;
    for (const auto &item : items)
      values.push_back(in.eval(*item, scope));
    return Value::list(std::move(values), tuple);
  }
  std::vector<ExprPtr> items;
  bool tuple;
};

struct DictExpr : Expr {
  DictExpr(size_t offset, std::vector<std::pair<ExprPtr, ExprPtr>> items)
      : Expr(offset), items(std::move(items)) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    Dict dict;
    for (const auto &[keyExpr, valueExpr] : items) {
      Value key = in.eval(*keyExpr, scope);
      if (!key.is(Value::Kind::String))
        fail("dict keys must be strings here, not " + typeName(key));
      dict.set(key.str(), in.eval(*valueExpr, scope));
    }
    return Value::dict(std::move(dict));
  }
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

struct AttrExpr : Expr {
  AttrExpr(size_t offset, ExprPtr object, std::string name)
      : Expr(offset), object(std::move(object)), name(std::move(name)) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    return getAttr(in.eval(*object, scope), name);
  }
  ExprPtr object;
  std::string name;
};

struct ItemExpr : Expr {
  ItemExpr(size_t offset, ExprPtr object, ExprPtr key)
      : Expr(offset), object(std::move(object)), key(std::move(key)) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    Value o = in.eval(*object, scope);
    return getItem(o, in.eval(*key, scope));
  }
  ExprPtr object, key;
};

// Python's slice semantics (negative indices, a negative step) on a list,
// tuple or string; the bounds are optional.
struct SliceExpr : Expr {
  SliceExpr(size_t offset, ExprPtr object, ExprPtr start, ExprPtr stop, ExprPtr step)
      : Expr(offset), object(std::move(object)), start(std::move(start)), stop(std::move(stop)),
        step(std::move(step)) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    Value o = in.eval(*object, scope);
    requireDefined(o);
    auto bound = [&](const ExprPtr &e) -> std::optional<int64_t> {
      if (!e)
        return std::nullopt;
      Value v = in.eval(*e, scope);
      if (v.is(Value::Kind::None))
        return std::nullopt;
      if (!v.is(Value::Kind::Int) && !v.is(Value::Kind::Bool))
        fail("slice indices must be integers or None");
      return v.asInt();
    };
    std::optional<int64_t> first = bound(start), last = bound(stop), by = bound(step);
    int64_t stride = by.value_or(1);
    if (stride == 0)
      fail("slice step cannot be zero");
    bool isString = o.is(Value::Kind::String);
    if (!isString && !o.is(Value::Kind::List))
      return Value::undefined(typeName(o) + " object has no element slice");
    std::vector<char32_t> chars = isString ? codePoints(o.str()) : std::vector<char32_t>{};
    int64_t n = isString ? (int64_t)chars.size() : (int64_t)o.items().size();
    auto clamp = [&](std::optional<int64_t> index, int64_t fallback) {
      if (!index)
        return fallback;
      int64_t i = *index < 0 ? *index + n : *index;
      return stride > 0 ? std::clamp<int64_t>(i, 0, n) : std::clamp<int64_t>(i, -1, n - 1);
    };
    int64_t i = clamp(first, stride > 0 ? 0 : n - 1), end = clamp(last, stride > 0 ? n : -1);
    std::vector<size_t> picked;
    for (; stride > 0 ? i < end : i > end; i += stride)
      picked.push_back((size_t)i);
    if (isString) {
      std::string text;
      for (size_t k : picked)
        appendUtf8(text, chars[k]);
      return Value::string(std::move(text));
    }
    List items;
    for (size_t k : picked)
      items.push_back(o.items()[k]);
    return Value::list(std::move(items), o.isTuple());
  }
  ExprPtr object, start, stop, step;
};

struct CallExpr : Expr {
  CallExpr(size_t offset, ExprPtr callee, std::vector<Argument> args)
      : Expr(offset), callee(std::move(callee)), args(std::move(args)) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    Value f = in.eval(*callee, scope);
    Args values = in.evalArgs(args, scope);
    return callValue(in, f, values);
  }
  ExprPtr callee;
  std::vector<Argument> args;
};

struct FilterExpr : Expr {
  FilterExpr(size_t offset, ExprPtr operand, FilterFn filter, std::vector<Argument> args)
      : Expr(offset), operand(std::move(operand)), filter(filter), args(std::move(args)) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    Value v = in.eval(*operand, scope);
    Args values = in.evalArgs(args, scope);
    return filter(in, v, values);
  }
  ExprPtr operand;
  FilterFn filter;
  std::vector<Argument> args;
};

struct TestExpr : Expr {
  TestExpr(size_t offset, ExprPtr operand, TestFn test, std::vector<Argument> args, bool negated)
      : Expr(offset), operand(std::move(operand)), test(test), args(std::move(args)),
        negated(negated) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    Value v = in.eval(*operand, scope);
    Args values = in.evalArgs(args, scope);
    return Value::boolean(test(in, v, values) != negated);
  }
  ExprPtr operand;
  TestFn test;
  std::vector<Argument> args;
  bool negated;
};

struct NotExpr : Expr {
  NotExpr(size_t offset, ExprPtr operand) : Expr(offset), operand(std::move(operand)) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    return Value::boolean(!truthy(in.eval(*operand, scope)));
  }
  ExprPtr operand;
};

struct NegExpr : Expr {
  NegExpr(size_t offset, ExprPtr operand, bool negate)
      : Expr(offset), operand(std::move(operand)), negate(negate) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    Value v = in.eval(*operand, scope);
    requireDefined(v);
    if (v.is(Value::Kind::Float))
      return Value::number(negate ? -v.asDouble() : v.asDouble());
    if (!v.isNumber())
      fail(std::string("bad operand type for unary ") + (negate ? "-" : "+") + ": '" + typeName(v) +
           "'");
    if (negate && v.asInt() == INT64_MIN)
      fail("integer overflow");
    return Value::integer(negate ? -v.asInt() : v.asInt());
  }
  ExprPtr operand;
  bool negate;
};

// `and` and `or` return an operand, as in Python.
struct LogicExpr : Expr {
  LogicExpr(size_t offset, ExprPtr lhs, ExprPtr rhs, bool isAnd)
      : Expr(offset), lhs(std::move(lhs)), rhs(std::move(rhs)), isAnd(isAnd) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    Value left = in.eval(*lhs, scope);
    return truthy(left) == isAnd ? in.eval(*rhs, scope) : left;
  }
  ExprPtr lhs, rhs;
  bool isAnd;
};

enum class BinaryOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };

// Python's ints do not overflow; Kiln's are 64-bit and say so when they would.
void checkOverflow(bool overflow) {
  if (overflow)
    fail("integer overflow");
}

Value repeat(const Value &sequence, int64_t times) {
  times = std::max<int64_t>(times, 0);
  if (sequence.is(Value::Kind::String)) {
    if (times && sequence.str().size() > kMaxSize / (size_t)times)
      fail("string too long");
    std::string out;
    for (int64_t i = 0; i < times; ++i)
      out += sequence.str();
    return Value::string(std::move(out));
  }
  if (times && sequence.items().size() > kMaxSize / (size_t)times)
    fail("list too long");
  List out;
  for (int64_t i = 0; i < times; ++i)
    out.insert(out.end(), sequence.items().begin(), sequence.items().end());
  return Value::list(std::move(out), sequence.isTuple());
}

Value binary(BinaryOp op, const Value &a, const Value &b) {
  static const char *const symbols[] = {"+", "-", "*", "/", "//", "%", "**"};
  if (op == BinaryOp::Mod && a.is(Value::Kind::String))
    fail("printf-style '%' formatting of strings is not supported");
  requireDefined(a);
  requireDefined(b);
  if (a.isNumber() && b.isNumber()) {
    bool isFloat = a.is(Value::Kind::Float) || b.is(Value::Kind::Float);
    if (op == BinaryOp::Div || isFloat) {
      double x = a.asDouble(), y = b.asDouble();
      switch (op) {
      case BinaryOp::Add:
        return Value::number(x + y);
      case BinaryOp::Sub:
        return Value::number(x - y);
      case BinaryOp::Mul:
        return Value::number(x * y);
      case BinaryOp::Div:
        if (y == 0)
          fail("division by zero");
        return Value::number(x / y);
      case BinaryOp::FloorDiv:
      case BinaryOp::Mod: {
        if (y == 0)
          fail(op == BinaryOp::Mod ? "float modulo" : "float floor division by zero");
        // CPython's float_divmod: the remainder takes the divisor's sign.
        double mod = std::fmod(x, y), div = (x - mod) / y;
        if (mod == 0) {
          mod = std::copysign(0.0, y);
        } else if ((y < 0) != (mod < 0)) {
          mod += y;
          div -= 1;
        }
        if (op == BinaryOp::Mod)
          return Value::number(mod);
        if (div == 0)
          return Value::number(std::copysign(0.0, x / y));
        double floored = std::floor(div);
        return Value::number(div - floored > 0.5 ? floored + 1 : floored);
      }
      case BinaryOp::Pow:
        if (x == 0 && y < 0)
          fail("0.0 cannot be raised to a negative power");
        return Value::number(std::pow(x, y));
      }
    }
    int64_t x = a.asInt(), y = b.asInt(), r;
    switch (op) {
    case BinaryOp::Add:
      checkOverflow(__builtin_add_overflow(x, y, &r));
      return Value::integer(r);
    case BinaryOp::Sub:
      checkOverflow(__builtin_sub_overflow(x, y, &r));
      return Value::integer(r);
    case BinaryOp::Mul:
      checkOverflow(__builtin_mul_overflow(x, y, &r));
      return Value::integer(r);
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod: {
      if (y == 0)
        fail(op == BinaryOp::Mod ? "integer modulo by zero" : "integer division or modulo by zero");
      if (x == INT64_MIN && y == -1)
        fail("integer overflow");
      int64_t div = x / y, mod = x % y;
      if (mod != 0 && ((mod < 0) != (y < 0))) {
        mod += y;
        div -= 1;
      }
      return Value::integer(op == BinaryOp::Mod ? mod : div);
    }
    case BinaryOp::Pow: {
      if (y < 0)
        return binary(op, Value::number((double)x), b);
      int64_t result = 1;
      for (int64_t i = 0; i < y; ++i) {
        checkOverflow(__builtin_mul_overflow(result, x, &result));
        if (result == 0 || result == 1)
          break;
      }
      return Value::integer(result);
    }
    default:
      break;
    }
  }
  if (op == BinaryOp::Add) {
    if (a.is(Value::Kind::String) && b.is(Value::Kind::String))
      return Value::string(a.str() + b.str());
    if (a.is(Value::Kind::List) && b.is(Value::Kind::List) && a.isTuple() == b.isTuple()) {
      List items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      return Value::list(std::move(items), a.isTuple());
    }
    if (a.is(Value::Kind::String) || a.is(Value::Kind::List))
      fail("can only concatenate " + typeName(a) + " (not \"" + typeName(b) + "\") to " +
           typeName(a));
  }
  if (op == BinaryOp::Mul) {
    bool aSequence = a.is(Value::Kind::String) || a.is(Value::Kind::List);
    bool bSequence = b.is(Value::Kind::String) || b.is(Value::Kind::List);
    if (aSequence && (b.is(Value::Kind::Int) || b.is(Value::Kind::Bool)))
      return repeat(a, b.asInt());
    if (bSequence && (a.is(Value::Kind::Int) || a.is(Value::Kind::Bool)))
      return repeat(b, a.asInt());
  }
  fail(std::string("unsupported operand type(s) for ") + symbols[(int)op] + ": '" + typeName(a) +
       "' and '" + typeName(b) + "'");
}

struct BinaryExpr : Expr {
  BinaryExpr(size_t offset, BinaryOp op, ExprPtr lhs, ExprPtr rhs)
      : Expr(offset), op(op), lhs(std::move(lhs)), rhs(std::move(rhs)) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    Value left = in.eval(*lhs, scope);
    return binary(op, left, in.eval(*rhs, scope));
  }
  BinaryOp op;
  ExprPtr lhs, rhs;
};

// `a ~ b ~ c`: the operands as str() joined.
struct ConcatExpr : Expr {
  ConcatExpr(size_t offset, std::vector<ExprPtr> parts) : Expr(offset), parts(std::move(parts)) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    std::string out;
    for (const auto &part : parts) {
      int depth = 0;
      appendStr(out, in.eval(*part, scope), depth);
    }
    return Value::string(std::move(out));
  }
  std::vector<ExprPtr> parts;
};

enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

bool compare(CompareOp op, const Value &a, const Value &b) {
  switch (op) {
  case CompareOp::Eq:
    return equals(a, b);
  case CompareOp::Ne:
    return !equals(a, b);
  case CompareOp::Lt:
    return less(a, b);
  case CompareOp::Le:
    return less(a, b) || equals(a, b);
  case CompareOp::Gt:
    return less(b, a);
  case CompareOp::Ge:
    return less(b, a) || equals(a, b);
  case CompareOp::In:
    return contains(b, a);
  case CompareOp::NotIn:
    return !contains(b, a);
  }
  return false;
}

// Comparisons chain as in Python: a < b < c is a < b and b < c.
struct CompareExpr : Expr {
  CompareExpr(size_t offset, ExprPtr first, std::vector<std::pair<CompareOp, ExprPtr>> rest)
      : Expr(offset), first(std::move(first)), rest(std::move(rest)) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    Value left = in.eval(*first, scope);
    for (const auto &[op, expr] : rest) {
      Value right = in.eval(*expr, scope);
      if (!compare(op, left, right))
        return Value::boolean(false);
      left = std::move(right);
    }
    return Value::boolean(true);
  }
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
};

// `a if c else b`; without `else`, an undefined value.
struct CondExpr : Expr {
  CondExpr(size_t offset, ExprPtr test, ExprPtr then, ExprPtr otherwise)
      : Expr(offset), test(std::move(test)), then(std::move(then)),
        otherwise(std::move(otherwise)) {}
  Value eval(Interpreter &in, const ScopePtr &scope) const override {
    if (truthy(in.eval(*test, scope)))
      return in.eval(*then, scope);
    if (otherwise)
      return in.eval(*otherwise, scope);
    return Value::undefined(
        "the inline if-expression evaluated to false and no else section was defined");
  }
  ExprPtr test, then, otherwise;
};

//===--- Statements ---===//

struct TextStmt : Stmt {
  TextStmt(size_t offset, std::string text) : Stmt(offset), text(std::move(text)) {}
  Flow render(Interpreter &, const ScopePtr &, std::string &out) const override {
    out += text;
    return Flow::Normal;
  }
  std::string text;
};

struct OutputStmt : Stmt {
  OutputStmt(size_t offset, ExprPtr value) : Stmt(offset), value(std::move(value)) {}
  Flow render(Interpreter &in, const ScopePtr &scope, std::string &out) const override {
    int depth = 0;
    appendStr(out, in.eval(*value, scope), depth);
    return Flow::Normal;
  }
  ExprPtr value;
};

struct IfStmt : Stmt {
  explicit IfStmt(size_t offset) : Stmt(offset) {}
  Flow render(Interpreter &in, const ScopePtr &scope, std::string &out) const override {
    for (const auto &[test, body] : branches)
      if (truthy(in.eval(*test, scope)))
        return in.render(body, scope, out);
    return in.render(otherwise, scope, out);
  }
  std::vector<std::pair<ExprPtr, Body>> branches; // if, then each elif
  Body otherwise;
};

// Binds a value to `for a, b in` or `set a, b =` targets.
void bindTargets(Scope &scope, const std::vector<std::string> &targets, bool unpack,
                 const Value &value) {
  if (!unpack) {
    scope.vars.set(targets[0], value);
    return;
  }
  List items = iterate(value);
  if (items.size() < targets.size())
    fail("not enough values to unpack (expected " + std::to_string(targets.size()) + ", got " +
         std::to_string(items.size()) + ")");
  if (items.size() > targets.size())
    fail("too many values to unpack (expected " + std::to_string(targets.size()) + ")");
  for (size_t i = 0; i < targets.size(); ++i)
    scope.vars.set(targets[i], items[i]);
}

struct ForStmt : Stmt {
  explicit ForStmt(size_t offset) : Stmt(offset) {}
  Flow render(Interpreter &in, const ScopePtr &scope, std::string &out) const override {
    List candidates = iterate(in.eval(*iterable, scope));
    List items;
    for (Value &item : candidates) {
      if (filter) {
        auto filterScope = std::make_shared<Scope>(scope);
        bindTargets(*filterScope, targets, unpack, item);
        if (!truthy(in.eval(*filter, filterScope)))
          continue;
      }
      items.push_back(std::move(item));
    }
    if (items.empty()) // `else`: loop controls in it belong to an enclosing loop
      return in.render(otherwise, std::make_shared<Scope>(scope), out);
    int64_t n = (int64_t)items.size();
    for (int64_t i = 0; i < n; ++i) {
      in.step();
      auto iteration = std::make_shared<Scope>(scope);
      bindTargets(*iteration, targets, unpack, items[i]);
      if (usesLoop)
        iteration->vars.set("loop", loopObject(items, i));
      if (in.render(body, iteration, out) == Flow::Break)
        break;
    }
    return Flow::Normal;
  }
  static Value loopObject(const List &items, int64_t i) {
    int64_t n = (int64_t)items.size();
    Dict loop;
    loop.items = {
        {"index", Value::integer(i + 1)},
        {"index0", Value::integer(i)},
        {"revindex", Value::integer(n - i)},
        {"revindex0", Value::integer(n - i - 1)},
        {"first", Value::boolean(i == 0)},
        {"last", Value::boolean(i == n - 1)},
        {"length", Value::integer(n)},
        {"depth", Value::integer(1)},
        {"depth0", Value::integer(0)},
        {"previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item")},
        {"nextitem", i + 1 < n ? items[i + 1] : Value::undefined("there is no next item")},
        {"cycle", Value::function("loop.cycle", [i](Interpreter &, const Args &args) {
           if (args.positional.empty() || !args.keyword.empty())
             fail("loop.cycle() takes one or more positional arguments");
           return args.positional[(size_t)i % args.positional.size()];
         })}};
    return Value::object(false, std::move(loop));
  }
  std::vector<std::string> targets;
  bool unpack = false;  // the targets were a tuple
  bool usesLoop = true; // the body reads `loop`; jinja2 too makes it only then
  ExprPtr iterable, filter;
  Body body, otherwise;
};

struct SetStmt : Stmt {
  explicit SetStmt(size_t offset) : Stmt(offset) {}
  Flow render(Interpreter &in, const ScopePtr &scope, std::string &) const override {
    Value v = value ? in.eval(*value, scope) : renderBody(in, scope);
    if (attribute.empty()) {
      bindTargets(*scope, targets, unpack, v);
      return Flow::Normal;
    }
    const Value *target = scope->find(targets[0]);
    if (!target || !target->is(Value::Kind::Object) || !target->object().isNamespace)
      fail("cannot assign attribute on non-namespace object");
    target->object().attributes.set(attribute, std::move(v));
    return Flow::Normal;
  }
  Value renderBody(Interpreter &in, const ScopePtr &scope) const {
    std::string text;
    in.render(body, std::make_shared<Scope>(scope), text);
    return Value::string(std::move(text));
  }
  std::vector<std::string> targets;
  bool unpack = false;
  std::string attribute; // `set ns.attribute = ...`
  ExprPtr value;         // null for a block set
  Body body;
};

struct MacroStmt : Stmt {
  explicit MacroStmt(size_t offset) : Stmt(offset) {}
  Flow render(Interpreter &, const ScopePtr &scope, std::string &) const override;
  std::string name;
  std::vector<std::pair<std::string, ExprPtr>> params; // default may be null
  Body body;
};

Flow MacroStmt::render(Interpreter &, const ScopePtr &scope, std::string &) const {
  // The macro sees the variables of the frame it was defined in, as they
  // are when it is called. That frame holds the macro, so holding the frame
  // strongly would make a cycle.
  std::weak_ptr<Scope> defining = scope;
  const MacroStmt *macro = this;
  scope->vars.set(
      name, Value::function(name, [macro, defining](Interpreter &in, const Args &args) {
        in.step();
        auto call = std::make_shared<Scope>(defining.lock());
        const auto &params = macro->params;
        if (args.positional.size() > params.size())
          fail("macro '" + macro->name + "' takes not more than " + std::to_string(params.size()) +
               " argument(s)");
        for (const auto &keyword : args.keyword) {
          const std::string &key = keyword.first;
          auto param = std::find_if(params.begin(), params.end(),
                                    [&](const auto &p) { return p.first == key; });
          if (param == params.end())
            fail("macro '" + macro->name + "' takes no keyword argument '" + key + "'");
          if ((size_t)(param - params.begin()) < args.positional.size())
            fail("macro '" + macro->name + "' got multiple values for argument '" + key + "'");
        }
        for (size_t i = 0; i < params.size(); ++i) {
          const auto &[param, fallback] = params[i];
          std::optional<Value> value;
          if (i < args.positional.size())
            value = args.positional[i];
          for (const auto &[key, v] : args.keyword)
            if (key == param)
              value = v;
          // Defaults are evaluated at the call, seeing the parameters before.
          if (!value)
            value = fallback ? in.eval(*fallback, call)
                             : Value::undefined("parameter '" + param + "' was not provided");
          call->vars.set(param, *value);
        }
        std::string text;
        in.render(macro->body, call, text);
        return Value::string(std::move(text));
      }));
  return Flow::Normal;
}

struct LoopControlStmt : Stmt {
  LoopControlStmt(size_t offset, Flow flow) : Stmt(offset), flow(flow) {}
  Flow render(Interpreter &, const ScopePtr &, std::string &) const override { return flow; }
  Flow flow;
};

// transformers' {% generation %}: marks the assistant's part of the prompt
// for training masks, and renders its body (in a frame of its own, as the
// call block it compiles to does).
struct GenerationStmt : Stmt {
  explicit GenerationStmt(size_t offset) : Stmt(offset) {}
  Flow render(Interpreter &in, const ScopePtr &scope, std::string &out) const override {
    in.render(body, std::make_shared<Scope>(scope), out);
    return Flow::Normal;
  }
  Body body;
};

//===----------------------------------------------------------------------===//
// Attribute and item access (jinja2's sandboxed getattr and getitem)
//===----------------------------------------------------------------------===//

using Method = Value (*)(const Value &self, const Args &args);
const Method *findMethod(const Value &self, std::string_view name);

// Python type names in "has no attribute" messages, as jinja2 words them.
std::string objectTypeRepr(const Value &v) {
  return v.is(Value::Kind::None) ? "None" : typeName(v) + " object";
}

// Methods that modify their object: ImmutableSandboxedEnvironment makes them
// an undefined value that fails when called.
bool isUnsafeMethod(const Value &v, std::string_view name) {
  static const char *const listMethods[] = {"append", "clear",  "extend",  "insert",
                                            "pop",    "remove", "reverse", "sort"};
  static const char *const dictMethods[] = {"clear", "pop", "popitem", "setdefault", "update"};
  if (v.is(Value::Kind::List))
    return std::find(std::begin(listMethods), std::end(listMethods), name) != std::end(listMethods);
  if (v.is(Value::Kind::Dict))
    return std::find(std::begin(dictMethods), std::end(dictMethods), name) != std::end(dictMethods);
  return false;
}

// A Python attribute of the value itself (a method), if it has one.
std::optional<Value> pythonAttribute(const Value &object, const std::string &name) {
  if (const Method *method = findMethod(object, name)) {
    Method m = *method;
    return Value::function(
        name, [m, object](Interpreter &, const Args &args) { return m(object, args); });
  }
  if (isUnsafeMethod(object, name))
    return Value::undefined("access to attribute '" + name + "' of '" + typeName(object) +
                            "' object is unsafe.");
  if (object.is(Value::Kind::Object)) {
    if (const Value *v = object.object().attributes.find(name))
      return *v;
  }
  return std::nullopt;
}

// `object.name`: the Python attribute first (so `dict.items` is the method),
// then the item.
Value getAttr(const Value &object, const std::string &name) {
  requireDefined(object);
  if (std::optional<Value> attribute = pythonAttribute(object, name))
    return *attribute;
  if (object.is(Value::Kind::Dict)) {
    if (const Value *v = object.dict().find(name))
      return *v;
  }
  return Value::undefined("'" + objectTypeRepr(object) + "' has no attribute '" + name + "'");
}

// `object[key]`: the item first, then (for a string key) the attribute.
Value getItem(const Value &object, const Value &key) {
  requireDefined(object);
  if (object.is(Value::Kind::Dict) && key.is(Value::Kind::String)) {
    if (const Value *v = object.dict().find(key.str()))
      return *v;
  }
  bool isIndex = key.is(Value::Kind::Int) || key.is(Value::Kind::Bool);
  if (isIndex && (object.is(Value::Kind::List) || object.is(Value::Kind::String))) {
    int64_t i = key.asInt();
    if (object.is(Value::Kind::List)) {
      int64_t n = (int64_t)object.items().size();
      if (i < 0)
        i += n;
      if (i >= 0 && i < n)
        return object.items()[i];
    } else {
      std::vector<char32_t> chars = codePoints(object.str());
      int64_t n = (int64_t)chars.size();
      if (i < 0)
        i += n;
      if (i >= 0 && i < n)
        return Value::string(fromCodePoints({chars[i]}));
    }
  }
  if (key.is(Value::Kind::String)) {
    if (std::optional<Value> attribute = pythonAttribute(object, key.str()))
      return *attribute;
    return Value::undefined("'" + objectTypeRepr(object) + "' has no attribute '" + key.str() +
                            "'");
  }
  return Value::undefined(objectTypeRepr(object) + " has no element " + repr(key));
}

//===----------------------------------------------------------------------===//
// Arguments of filters, tests, methods and globals
//===----------------------------------------------------------------------===//

struct Param {
  const char *name;
  std::optional<Value> fallback; // none: required
};

// Binds positional and keyword arguments to a Python-style signature.
std::vector<Value> bindArgs(const char *callee, const Args &args,
                            std::initializer_list<Param> params) {
  if (args.positional.size() > params.size())
    fail(std::string(callee) + "() takes at most " + std::to_string(params.size()) +
         " argument(s) (" + std::to_string(args.positional.size()) + " given)");
  std::vector<Value> bound;
  size_t i = 0;
  for (const Param &param : params) {
    std::optional<Value> value;
    if (i < args.positional.size())
      value = args.positional[i];
    for (const auto &[key, v] : args.keyword) {
      if (key != param.name)
        continue;
      if (value)
        fail(std::string(callee) + "() got multiple values for argument '" + key + "'");
      value = v;
    }
    if (!value && !param.fallback)
      fail(std::string(callee) + "() missing required argument '" + param.name + "'");
    bound.push_back(value ? *value : *param.fallback);
    ++i;
  }
  for (const auto &keyword : args.keyword) {
    const std::string &key = keyword.first;
    bool known =
        std::any_of(params.begin(), params.end(), [&](const Param &p) { return key == p.name; });
    if (!known)
      fail(std::string(callee) + "() got an unexpected keyword argument '" + key + "'");
  }
  return bound;
}

const std::string &requireString(const Value &v, const char *what) {
  requireDefined(v);
  if (!v.is(Value::Kind::String))
    fail(std::string(what) + " must be a string, not " + typeName(v));
  return v.str();
}

int64_t requireInt(const Value &v, const char *what) {
  requireDefined(v);
  if (!v.is(Value::Kind::Int) && !v.is(Value::Kind::Bool))
    fail(std::string(what) + " must be an integer, not " + typeName(v));
  return v.asInt();
}

std::optional<std::string> optionalString(const Value &v, const char *what) {
  if (v.is(Value::Kind::None))
    return std::nullopt;
  return requireString(v, what);
}

//===----------------------------------------------------------------------===//
// Methods of str and dict
//===----------------------------------------------------------------------===//

Value splitMethod(const Value &self, const Args &args) {
  auto a = bindArgs("split", args, {{"sep", Value::none()}, {"maxsplit", Value::integer(-1)}});
  std::optional<std::string> sep = optionalString(a[0], "separator");
  int64_t maxsplit = requireInt(a[1], "maxsplit");
  const std::string &text = self.str();
  List parts;
  if (!sep) {
    // Runs of whitespace separate, and none start or end the result.
    size_t pos = 0, length;
    auto skipSpace = [&] {
      while (pos < text.size() && isPySpace(codePointAt(text, pos, length)))
        pos += length;
    };
    skipSpace();
    while (pos < text.size()) {
      if (maxsplit >= 0 && (int64_t)parts.size() == maxsplit) {
        parts.push_back(Value::string(pyStrip(text.substr(pos), std::nullopt, false, true)));
        break;
      }
      size_t start = pos;
      while (pos < text.size() && !isPySpace(codePointAt(text, pos, length)))
        pos += length;
      parts.push_back(Value::string(text.substr(start, pos - start)));
      skipSpace();
    }
    return Value::list(std::move(parts));
  }
  if (sep->empty())
    fail("empty separator");
  size_t start = 0;
  for (size_t hit; (maxsplit < 0 || (int64_t)parts.size() < maxsplit) &&
                   (hit = text.find(*sep, start)) != std::string::npos;
       start = hit + sep->size())
    parts.push_back(Value::string(text.substr(start, hit - start)));
  parts.push_back(Value::string(text.substr(start)));
  return Value::list(std::move(parts));
}

template <bool Left, bool Right> Value stripMethod(const Value &self, const Args &args) {
  auto a = bindArgs(Left && Right ? "strip"
                    : Left        ? "lstrip"
                                  : "rstrip",
                    args, {{"chars", Value::none()}});
  return Value::string(pyStrip(self.str(), optionalString(a[0], "chars"), Left, Right));
}

template <bool Start> Value affixMethod(const Value &self, const Args &args) {
  const char *name = Start ? "startswith" : "endswith";
  auto a = bindArgs(name, args, {{"prefix", std::nullopt}});
  const std::string &text = self.str();
  auto matches = [&](const Value &affix) {
    const std::string &s = requireString(affix, name);
    return s.size() <= text.size() &&
           text.compare(Start ? 0 : text.size() - s.size(), s.size(), s) == 0;
  };
  if (a[0].is(Value::Kind::List))
    return Value::boolean(std::any_of(a[0].items().begin(), a[0].items().end(), matches));
  return Value::boolean(matches(a[0]));
}

// str.replace, with Python's rule that an empty `old` matches between every
// character.
std::string pyReplace(const std::string &text, const std::string &old, const std::string &with,
                      int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {
    size_t pos = 0, length;
    for (; pos < text.size() && (count < 0 || done < count); pos += length, ++done) {
      out += with;
      codePointAt(text, pos, length);
      out.append(text, pos, length);
    }
    if (pos == text.size() && (count < 0 || done < count))
      out += with;
    return out + text.substr(pos);
  }
  size_t start = 0;
  for (size_t hit;
       (count < 0 || done < count) && (hit = text.find(old, start)) != std::string::npos;
       start = hit + old.size(), ++done) {
    out.append(text, start, hit - start);
    out += with;
  }
  return out + text.substr(start);
}

Value replaceMethod(const Value &self, const Args &args) {
  auto a = bindArgs("replace", args,
                    {{"old", std::nullopt}, {"new", std::nullopt}, {"count", Value::integer(-1)}});
  return Value::string(pyReplace(self.str(), requireString(a[0], "old"), requireString(a[1], "new"),
                                 requireInt(a[2], "count")));
}

template <std::string (*Map)(std::string_view)>
Value caseMethod(const Value &self, const Args &args) {
  bindArgs("str method", args, {});
  return Value::string(Map(self.str()));
}

std::string upper(std::string_view s) { return mapChars(s, toUpper); }
std::string lower(std::string_view s) { return mapChars(s, toLower); }
std::string capitalizeStr(std::string_view s) { return capitalize(s); }
std::string titleStr(std::string_view s) { return pyTitle(s); }

Value joinMethod(const Value &self, const Args &args) {
  auto a = bindArgs("join", args, {{"iterable", std::nullopt}});
  std::string out;
  bool first = true;
  for (const Value &item : iterate(a[0])) {
    if (!first)
      out += self.str();
    first = false;
    out += requireString(item, "join() item");
  }
  return Value::string(std::move(out));
}

Value dictGet(const Value &self, const Args &args) {
  auto a = bindArgs("get", args, {{"key", std::nullopt}, {"default", Value::none()}});
  const Value *v = a[0].is(Value::Kind::String) ? self.dict().find(a[0].str()) : nullptr;
  return v ? *v : a[1];
}

Value dictItems(const Value &self, const Args &args) {
  bindArgs("items", args, {});
  List items;
  for (const auto &[key, value] : self.dict().items)
    items.push_back(Value::list({Value::string(key), value}, true));
  return Value::list(std::move(items));
}

Value dictKeys(const Value &self, const Args &args) {
  bindArgs("keys", args, {});
  return Value::list(iterate(self));
}

Value dictValues(const Value &self, const Args &args) {
  bindArgs("values", args, {});
  List values;
  for (const auto &item : self.dict().items)
    values.push_back(item.second);
  return Value::list(std::move(values));
}

const Method *findMethod(const Value &self, std::string_view name) {
  static const std::unordered_map<std::string_view, Method> stringMethods = {
      {"strip", stripMethod<true, true>},
      {"lstrip", stripMethod<true, false>},
      {"rstrip", stripMethod<false, true>},
      {"split", splitMethod},
      {"startswith", affixMethod<true>},
      {"endswith", affixMethod<false>},
      {"replace", replaceMethod},
      {"upper", caseMethod<upper>},
      {"lower", caseMethod<lower>},
      {"title", caseMethod<titleStr>},
      {"capitalize", caseMethod<capitalizeStr>},
      {"join", joinMethod},
  };
  static const std::unordered_map<std::string_view, Method> dictMethods = {
      {"get", dictGet}, {"items", dictItems}, {"keys", dictKeys}, {"values", dictValues}};
  const auto *table = self.is(Value::Kind::String) ? &stringMethods
                      : self.is(Value::Kind::Dict) ? &dictMethods
                                                   : nullptr;
  if (!table)
    return nullptr;
  auto it = table->find(name);
  return it == table->end() ? nullptr : &it->second;
}

//===----------------------------------------------------------------------===//
// Filters
//===----------------------------------------------------------------------===//

// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0.
Value lookupPath(const Value &item, const Value &attribute) {
  if (!attribute.is(Value::Kind::String))
    return getItem(item, attribute);
  Value v = item;
  const std::string &path = attribute.str();
  for (size_t start = 0;;) {
    size_t dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), isDigit);
    v = getItem(v, digits ? Value::integer(std::stoll(part)) : Value::string(part));
    if (dot == std::string::npos)
      return v;
    start = dot + 1;
  }
}

Value attributeOrItem(const Value &item, const Value &attribute) {
  return attribute.is(Value::Kind::None) ? item : lookupPath(item, attribute);
}

// A sort or uniqueness key: strings lowered unless case_sensitive.
Value caseKey(const Value &v, bool caseSensitive) {
  return !caseSensitive && v.is(Value::Kind::String) ? Value::string(lower(v.str())) : v;
}

Value filterDefault(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("default", args,
                    {{"default_value", Value::string("")}, {"boolean", Value::boolean(false)}});
  if (v.is(Value::Kind::Undefined) || (truthy(a[1]) && !truthy(v)))
    return a[0];
  return v;
}

Value filterLength(Interpreter &, const Value &v, const Args &args) {
  bindArgs("length", args, {});
  return Value::integer(length(v));
}

Value filterList(Interpreter &, const Value &v, const Args &args) {
  bindArgs("list", args, {});
  return Value::list(iterate(v));
}

Value filterString(Interpreter &, const Value &v, const Args &args) {
  bindArgs("string", args, {});
  return Value::string(toStr(v));
}

Value filterSafe(Interpreter &, const Value &v, const Args &args) {
  bindArgs("safe", args, {});
  return v;
}

template <std::string (*Map)(std::string_view)>
Value filterCase(Interpreter &, const Value &v, const Args &args) {
  bindArgs("case filter", args, {});
  return Value::string(Map(toStr(v)));
}

std::string jinjaTitleStr(std::string_view s) { return jinjaTitle(s); }

Value filterTrim(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("trim", args, {{"chars", Value::none()}});
  return Value::string(pyStrip(toStr(v), optionalString(a[0], "chars"), true, true));
}

Value filterReplace(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("replace", args,
                    {{"old", std::nullopt}, {"new", std::nullopt}, {"count", Value::none()}});
  int64_t count = a[2].is(Value::Kind::None) ? -1 : requireInt(a[2], "count");
  return Value::string(pyReplace(toStr(v), toStr(a[0]), toStr(a[1]), count));
}

Value filterJoin(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("join", args, {{"d", Value::string("")}, {"attribute", Value::none()}});
  std::string out;
  bool first = true;
  for (const Value &item : iterate(v)) {
    if (!first)
      out += toStr(a[0]);
    first = false;
    out += toStr(attributeOrItem(item, a[1]));
  }
  return Value::string(std::move(out));
}

Value filterFirst(Interpreter &, const Value &v, const Args &args) {
  bindArgs("first", args, {});
  List items = iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value filterLast(Interpreter &, const Value &v, const Args &args) {
  bindArgs("last", args, {});
  List items = iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value filterReverse(Interpreter &, const Value &v, const Args &args) {
  bindArgs("reverse", args, {});
  if (v.is(Value::Kind::String)) {
    std::vector<char32_t> chars = codePoints(v.str());
    std::reverse(chars.begin(), chars.end());
    return Value::string(fromCodePoints(chars));
  }
  List items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value filterItems(Interpreter &, const Value &v, const Args &args) {
  bindArgs("items", args, {});
  if (v.is(Value::Kind::Undefined))
    return Value::list({});
  if (!v.is(Value::Kind::Dict))
    fail("Can only get item pairs from a mapping.");
  Args none;
  return dictItems(v, none);
}

Value filterDictsort(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("dictsort", args,
                    {{"case_sensitive", Value::boolean(false)},
                     {"by", Value::string("key")},
                     {"reverse", Value::boolean(false)}});
  if (!v.is(Value::Kind::Dict))
    fail("dictsort() needs a mapping, not " + typeName(v));
  const std::string &by = requireString(a[1], "by");
  if (by != "key" && by != "value")
    fail("You can only sort by either 'key' or 'value'");
  size_t index = by == "key" ? 0 : 1;
  Args none;
  List items = dictItems(v, none).items();
  bool caseSensitive = truthy(a[0]), reverse = truthy(a[2]);
  std::stable_sort(items.begin(), items.end(), [&](const Value &x, const Value &y) {
    Value kx = caseKey(x.items()[index], caseSensitive),
          ky = caseKey(y.items()[index], caseSensitive);
    return reverse ? less(ky, kx) : less(kx, ky);
  });
  return Value::list(std::move(items));
}

Value filterSort(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("sort", args,
                    {{"reverse", Value::boolean(false)},
                     {"case_sensitive", Value::boolean(false)},
                     {"attribute", Value::none()}});
  List items = iterate(v);
  bool reverse = truthy(a[0]), caseSensitive = truthy(a[1]);
  std::stable_sort(items.begin(), items.end(), [&](const Value &x, const Value &y) {
    Value kx = caseKey(attributeOrItem(x, a[2]), caseSensitive);
    Value ky = caseKey(attributeOrItem(y, a[2]), caseSensitive);
    return reverse ? less(ky, kx) : less(kx, ky);
  });
  return Value::list(std::move(items));
}

Value filterUnique(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("unique", args,
                    {{"case_sensitive", Value::boolean(false)}, {"attribute", Value::none()}});
  List out, seen;
  for (const Value &item : iterate(v)) {
    Value key = caseKey(attributeOrItem(item, a[1]), truthy(a[0]));
    if (std::none_of(seen.begin(), seen.end(), [&](const Value &s) { return equals(s, key); })) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

template <bool Max> Value filterMinMax(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs(Max ? "max" : "min", args,
                    {{"case_sensitive", Value::boolean(false)}, {"attribute", Value::none()}});
  List items = iterate(v);
  if (items.empty())
    return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value &x) { return caseKey(attributeOrItem(x, a[1]), truthy(a[0])); };
  const Value *best = &items[0];
  for (const Value &item : items)
    if (Max ? less(key(*best), key(item)) : less(key(item), key(*best)))
      best = &item;
  return *best;
}

Value filterSum(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("sum", args, {{"attribute", Value::none()}, {"start", Value::integer(0)}});
  Value total = a[1];
  for (const Value &item : iterate(v))
    total = binary(BinaryOp::Add, total, attributeOrItem(item, a[0]));
  return total;
}

Value filterMap(Interpreter &in, const Value &v, const Args &args) {
  List out;
  if (args.positional.empty()) {
    auto a = bindArgs("map", args, {{"attribute", std::nullopt}, {"default", Value::none()}});
    for (const Value &item : iterate(v)) {
      Value mapped = lookupPath(item, a[0]);
      bool missing = mapped.is(Value::Kind::Undefined) && !a[1].is(Value::Kind::None);
      out.push_back(missing ? a[1] : mapped);
    }
    return Value::list(std::move(out));
  }
  const std::string &name = requireString(args.positional[0], "map() filter name");
  const FilterFn *filter = findFilter(name);
  if (!filter)
    fail("filter '" + name + "' is not supported");
  for (const Value &item : iterate(v)) {
    Args rest{{args.positional.begin() + 1, args.positional.end()}, args.keyword};
    out.push_back((*filter)(in, item, rest));
  }
  return Value::list(std::move(out));
}

// select, reject, selectattr and rejectattr: keep the items whose test (or,
// with no test named, truth) comes out as `keep`.
template <bool Keep, bool ByAttribute>
Value filterSelect(Interpreter &in, const Value &v, const Args &args) {
  size_t first = ByAttribute ? 1 : 0;
  if (args.positional.size() < first || !args.keyword.empty())
    fail("select filters take their arguments by position");
  const TestFn *test = nullptr;
  if (args.positional.size() > first) {
    const std::string &name = requireString(args.positional[first], "test name");
    test = findTest(name);
    if (!test)
      fail("test '" + name + "' is not supported");
  }
  Args testArgs;
  if (args.positional.size() > first + 1)
    testArgs.positional.assign(args.positional.begin() + first + 1, args.positional.end());
  List out;
  for (const Value &item : iterate(v)) {
    Value subject = ByAttribute ? lookupPath(item, args.positional[0]) : item;
    bool passed = test ? (*test)(in, subject, testArgs) : truthy(subject);
    if (passed == Keep)
      out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value filterTojson(Interpreter &, const Value &v, const Args &args) {
  // transformers' tojson: json.dumps(x, ensure_ascii=False, indent=indent,
  // separators=separators, sort_keys=sort_keys), unlike jinja2's own, which
  // escapes HTML characters.
  auto a = bindArgs("tojson", args,
                    {{"ensure_ascii", Value::boolean(false)},
                     {"indent", Value::none()},
                     {"separators", Value::none()},
                     {"sort_keys", Value::boolean(false)}});
  JsonStyle style;
  style.ensureAscii = truthy(a[0]);
  style.sortKeys = truthy(a[3]);
  if (a[1].is(Value::Kind::String))
    style.indent = a[1].str();
  else if (!a[1].is(Value::Kind::None))
    style.indent =
        std::string((size_t)std::clamp<int64_t>(requireInt(a[1], "indent"), 0, 1024), ' ');
  style.itemSeparator = style.indent ? "," : ", ";
  style.keySeparator = ": ";
  if (!a[2].is(Value::Kind::None)) {
    if (!a[2].is(Value::Kind::List) || a[2].items().size() != 2)
      fail("separators must be a pair of strings");
    style.itemSeparator = requireString(a[2].items()[0], "separator");
    style.keySeparator = requireString(a[2].items()[1], "separator");
  }
  std::string out;
  appendJson(out, v, style, 0);
  return Value::string(std::move(out));
}

Value filterIndent(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("indent", args,
                    {{"width", Value::integer(4)},
                     {"first", Value::boolean(false)},
                     {"blank", Value::boolean(false)}});
  std::string indent =
      a[0].is(Value::Kind::String)
          ? a[0].str()
          : std::string((size_t)std::clamp<int64_t>(requireInt(a[0], "width"), 0, 1024), ' ');
  // jinja2 appends a newline before splitting, so a trailing newline
  // survives and an empty string is one empty line.
  std::vector<std::string> lines = splitLines(toStr(v) + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i)
      out += '\n';
    bool indentLine = i == 0 ? truthy(a[1]) : truthy(a[2]) || !lines[i].empty();
    out += (indentLine ? indent : "") + lines[i];
  }
  return Value::string(std::move(out));
}

// Python's int() of a string: optional sign and whitespace, digits with
// single underscores between them.
std::optional<int64_t> parseInt(std::string_view text) {
  std::string s = pyStrip(text, std::nullopt, true, true), digits;
  size_t i = s.size() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
  for (size_t j = i; j < s.size(); ++j) {
    if (isDigit(s[j]))
      digits += s[j];
    else if (!(s[j] == '_' && j > i && isDigit(s[j - 1]) && j + 1 < s.size() && isDigit(s[j + 1])))
      return std::nullopt;
  }
  int64_t value;
  if (digits.empty() ||
      std::from_chars(digits.data(), digits.data() + digits.size(), value).ec != std::errc())
    return std::nullopt;
  return s[0] == '-' ? -value : value;
}

// Python's float() of a string: a decimal number, inf or nan.
std::optional<double> parseFloat(std::string_view text) {
  std::string s = pyStrip(text, std::nullopt, true, true), clean;
  for (size_t j = 0; j < s.size(); ++j) {
    if (s[j] == '_' && j > 0 && isDigit(s[j - 1]) && j + 1 < s.size() && isDigit(s[j + 1]))
      continue;
    clean += (char)std::tolower((unsigned char)s[j]);
  }
  std::string_view body = clean;
  if (!body.empty() && (body[0] == '+' || body[0] == '-'))
    body.remove_prefix(1);
  if (body == "inf" || body == "infinity" || body == "nan")
    return std::strtod(clean.c_str(), nullptr);
  size_t digits = 0, i = 0;
  for (; i < body.size() && isDigit(body[i]); ++i)
    ++digits;
  if (i < body.size() && body[i] == '.')
    for (++i; i < body.size() && isDigit(body[i]); ++i)
      ++digits;
  if (digits && i < body.size() && body[i] == 'e') {
    size_t j = i + 1 < body.size() && (body[i + 1] == '+' || body[i + 1] == '-') ? i + 2 : i + 1;
    if (j < body.size() && isDigit(body[j]))
      for (i = j; i < body.size() && isDigit(body[i]); ++i) {
      }
  }
  if (!digits || i != body.size())
    return std::nullopt;
  return std::strtod(clean.c_str(), nullptr);
}

std::optional<int64_t> truncateToInt(double f) {
  if (!(std::fabs(f) < 9.2e18))
    return std::nullopt;
  return (int64_t)f;
}

Value filterInt(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("int", args, {{"default", Value::integer(0)}, {"base", Value::integer(10)}});
  requireDefined(v);
  if (requireInt(a[1], "base") != 10)
    fail("int() with a base other than 10 is not supported");
  std::optional<int64_t> result;
  if (v.is(Value::Kind::String)) {
    result = parseInt(v.str());
    if (!result)
      if (std::optional<double> f = parseFloat(v.str()))
        result = truncateToInt(*f);
  } else if (v.is(Value::Kind::Float)) {
    result = truncateToInt(v.asDouble());
  } else if (v.isNumber()) {
    result = v.asInt();
  }
  return result ? Value::integer(*result) : a[0];
}

Value filterFloat(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("float", args, {{"default", Value::number(0.0)}});
  requireDefined(v);
  if (v.isNumber())
    return Value::number(v.asDouble());
  std::optional<double> f = v.is(Value::Kind::String) ? parseFloat(v.str()) : std::nullopt;
  return f ? Value::number(*f) : a[0];
}

Value filterAbs(Interpreter &, const Value &v, const Args &args) {
  bindArgs("abs", args, {});
  requireDefined(v);
  if (v.is(Value::Kind::Float))
    return Value::number(std::fabs(v.asDouble()));
  if (!v.isNumber())
    fail("bad operand type for abs(): '" + typeName(v) + "'");
  if (v.asInt() == INT64_MIN)
    fail("integer overflow");
  return Value::integer(std::abs(v.asInt()));
}

// round(): Python's round() (halves to even, exactly on the binary value,
// which printf's correctly rounded conversion gives) or ceil/floor.
Value filterRound(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("round", args,
                    {{"precision", Value::integer(0)}, {"method", Value::string("common")}});
  requireDefined(v);
  if (!v.isNumber())
    fail("round() needs a number, not " + typeName(v));
  int64_t precision = requireInt(a[0], "precision");
  const std::string &method = requireString(a[1], "method");
  if (precision < 0 || precision > 300)
    fail("round() precision must be between 0 and 300");
  if (method == "common") {
    if (!v.is(Value::Kind::Float))
      return Value::integer(v.asInt());
    char buffer[400];
    std::snprintf(buffer, sizeof buffer, "%.*f", (int)precision, v.asDouble());
    return Value::number(std::strtod(buffer, nullptr));
  }
  if (method != "ceil" && method != "floor")
    fail("method must be common, ceil or floor");
  double scale = std::pow(10.0, (double)precision), x = v.asDouble() * scale;
  return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

const FilterFn *findFilter(std::string_view name) {
  static const std::unordered_map<std::string_view, FilterFn> filters = {
      {"abs", filterAbs},
      {"capitalize", filterCase<capitalizeStr>},
      {"count", filterLength},
      {"d", filterDefault},
      {"default", filterDefault},
      {"dictsort", filterDictsort},
      {"first", filterFirst},
      {"float", filterFloat},
      {"indent", filterIndent},
      {"int", filterInt},
      {"items", filterItems},
      {"join", filterJoin},
      {"last", filterLast},
      {"length", filterLength},
      {"list", filterList},
      {"lower", filterCase<lower>},
      {"map", filterMap},
      {"max", filterMinMax<true>},
      {"min", filterMinMax<false>},
      {"reject", filterSelect<false, false>},
      {"rejectattr", filterSelect<false, true>},
      {"replace", filterReplace},
      {"reverse", filterReverse},
      {"round", filterRound},
      {"safe", filterSafe},
      {"select", filterSelect<true, false>},
      {"selectattr", filterSelect<true, true>},
      {"sort", filterSort},
      {"string", filterString},
      {"sum", filterSum},
      {"title", filterCase<jinjaTitleStr>},
      {"tojson", filterTojson},
      {"trim", filterTrim},
      {"unique", filterUnique},
      {"upper", filterCase<upper>},
  };
  auto it = filters.find(name);
  return it == filters.end() ? nullptr : &it->second;
}

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

template <Value::Kind K> bool testKind(Interpreter &, const Value &v, const Args &args) {
  bindArgs("test", args, {});
  return v.is(K);
}

bool testDefined(Interpreter &, const Value &v, const Args &args) {
  bindArgs("defined", args, {});
  return !v.is(Value::Kind::Undefined);
}

template <bool B> bool testBool(Interpreter &, const Value &v, const Args &args) {
  bindArgs("test", args, {});
  return v.is(Value::Kind::Bool) && v.asBool() == B;
}

bool testNumber(Interpreter &, const Value &v, const Args &args) {
  bindArgs("number", args, {});
  return v.isNumber();
}

// Python's iter() and len()/[] work on Undefined too.
bool testIterable(Interpreter &, const Value &v, const Args &args) {
  bindArgs("iterable", args, {});
  return v.is(Value::Kind::String) || v.is(Value::Kind::List) || v.is(Value::Kind::Dict) ||
         v.is(Value::Kind::Undefined);
}

bool testCallable(Interpreter &, const Value &v, const Args &args) {
  bindArgs("callable", args, {});
  return v.is(Value::Kind::Function) || v.is(Value::Kind::Undefined);
}

Value modulo(const Value &v, const Value &divisor) { return binary(BinaryOp::Mod, v, divisor); }

template <int Remainder> bool testParity(Interpreter &, const Value &v, const Args &args) {
  bindArgs("odd/even", args, {});
  return equals(modulo(v, Value::integer(2)), Value::integer(Remainder));
}

bool testDivisibleBy(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("divisibleby", args, {{"num", std::nullopt}});
  return equals(modulo(v, a[0]), Value::integer(0));
}

template <CompareOp Op> bool testCompare(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("comparison", args, {{"other", std::nullopt}});
  return compare(Op, v, a[0]);
}

bool testIn(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("in", args, {{"seq", std::nullopt}});
  return contains(a[0], v);
}

bool testSameAs(Interpreter &, const Value &v, const Args &args) {
  auto a = bindArgs("sameas", args, {{"other", std::nullopt}});
  const Value &o = a[0];
  if (v.kind() != o.kind())
    return false;
  switch (v.kind()) {
  case Value::Kind::List:
  case Value::Kind::Dict:
  case Value::Kind::Object:
  case Value::Kind::Function:
    return v.identity() == o.identity();
  default:
    return equals(v, o);
  }
}

// str.islower()/isupper(): some cased character, and none of the other case.
template <bool Lower> bool testCase(Interpreter &, const Value &v, const Args &args) {
  bindArgs("lower/upper", args, {});
  std::string text = toStr(v);
  bool cased = false;
  for (size_t pos = 0, length; pos < text.size(); pos += length) {
    char32_t c = codePointAt(text, pos, length);
    if (!isCased(c))
      continue;
    cased = true;
    if ((Lower ? toLower(c) : toUpper(c)) != c)
      return false;
  }
  return cased;
}

const TestFn *findTest(std::string_view name) {
  static const std::unordered_map<std::string_view, TestFn> tests = {
      {"boolean", testKind<Value::Kind::Bool>},
      {"callable", testCallable},
      {"defined", testDefined},
      {"divisibleby", testDivisibleBy},
      {"eq", testCompare<CompareOp::Eq>},
      {"equalto", testCompare<CompareOp::Eq>},
      {"==", testCompare<CompareOp::Eq>},
      {"even", testParity<0>},
      {"false", testBool<false>},
      {"float", testKind<Value::Kind::Float>},
      {"ge", testCompare<CompareOp::Ge>},
      {">=", testCompare<CompareOp::Ge>},
      {"gt", testCompare<CompareOp::Gt>},
      {"greaterthan", testCompare<CompareOp::Gt>},
      {">", testCompare<CompareOp::Gt>},
      {"in", testIn},
      {"integer", testKind<Value::Kind::Int>},
      {"iterable", testIterable},
      {"le", testCompare<CompareOp::Le>},
      {"<=", testCompare<CompareOp::Le>},
      {"lower", testCase<true>},
      {"lt", testCompare<CompareOp::Lt>},
      {"lessthan", testCompare<CompareOp::Lt>},
      {"<", testCompare<CompareOp::Lt>},
      {"mapping", testKind<Value::Kind::Dict>},
      {"ne", testCompare<CompareOp::Ne>},
      {"!=", testCompare<CompareOp::Ne>},
      {"none", testKind<Value::Kind::None>},
      {"number", testNumber},
      {"odd", testParity<1>},
      {"sameas", testSameAs},
      {"sequence", testIterable},
      {"string", testKind<Value::Kind::String>},
      {"true", testBool<true>},
      {"undefined", testKind<Value::Kind::Undefined>},
      {"upper", testCase<false>},
  };
  auto it = tests.find(name);
  return it == tests.end() ? nullptr : &it->second;
}

//===----------------------------------------------------------------------===//
// Globals
//===----------------------------------------------------------------------===//

Value globalRange(Interpreter &, const Args &args) {
  if (!args.keyword.empty() || args.positional.empty() || args.positional.size() > 3)
    fail("range() takes 1 to 3 positional arguments");
  std::vector<int64_t> a;
  for (const Value &v : args.positional)
    a.push_back(requireInt(v, "range() argument"));
  int64_t start = a.size() > 1 ? a[0] : 0, stop = a.size() > 1 ? a[1] : a[0],
          step = a.size() > 2 ? a[2] : 1;
  if (step == 0)
    fail("range() arg 3 must not be zero");
  long double count = step > 0 ? ((long double)stop - start + step - 1) / step
                               : ((long double)start - stop - step - 1) / -step;
  if (count > kMaxRange)
    fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" +
         std::to_string(kMaxRange) + ").");
  List items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
    items.push_back(Value::integer(i));
  return Value::list(std::move(items));
}

// dict(...) and namespace(...): a mapping or iterable of pairs, then
// keyword arguments.
Dict dictFromArgs(const char *name, const Args &args) {
  if (args.positional.size() > 1)
    fail(std::string(name) + "() takes at most 1 positional argument");
  Dict dict;
  if (!args.positional.empty()) {
    const Value &source = args.positional[0];
    if (source.is(Value::Kind::Dict)) {
      dict = source.dict();
    } else {
      for (const Value &pair : iterate(source)) {
        List kv = iterate(pair);
        if (kv.size() != 2)
          fail(std::string(name) + "() sequence elements must be key-value pairs");
        dict.set(requireString(kv[0], "key"), kv[1]);
      }
    }
  }
  for (const auto &[key, value] : args.keyword)
    dict.set(key, value);
  return dict;
}

Value globalDict(Interpreter &, const Args &args) {
  return Value::dict(dictFromArgs("dict", args));
}
Value globalNamespace(Interpreter &, const Args &args) {
  return Value::object(true, dictFromArgs("namespace", args));
}

Value globalRaiseException(Interpreter &, const Args &args) {
  auto a = bindArgs("raise_exception", args, {{"message", std::nullopt}});
  throw RaisedError{toStr(a[0])};
}

// strftime_now(format): the local time, as datetime.now().strftime does.
Value globalStrftimeNow(Interpreter &, const Args &args) {
  auto a = bindArgs("strftime_now", args, {{"format", std::nullopt}});
  const std::string &format = requireString(a[0], "format");
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  // strftime returns 0 both on overflow and for an empty result; a marker
  // character tells them apart.
  std::string marked = format + "\x01";
  for (size_t size = 256; size <= (1u << 20); size *= 4) {
    std::string buffer(size, '\0');
    size_t n = std::strftime(buffer.data(), size, marked.c_str(), &local);
    if (n > 0)
      return Value::string(buffer.substr(0, n - 1));
  }
  fail("strftime_now() result too long");
}

Value unsupportedGlobal(const char *name) {
  return Value::function(name, [name](Interpreter &, const Args &) -> Value {
    fail(std::string("'") + name + "' is not supported");
  });
}

const Value *findGlobal(std::string_view name) {
  static const std::unordered_map<std::string_view, Value> globals = {
      {"range", Value::function("range", globalRange)},
      {"dict", Value::function("dict", globalDict)},
      {"namespace", Value::function("namespace", globalNamespace)},
      {"raise_exception", Value::function("raise_exception", globalRaiseException)},
      {"strftime_now", Value::function("strftime_now", globalStrftimeNow)},
      {"cycler", unsupportedGlobal("cycler")},
      {"joiner", unsupportedGlobal("joiner")},
      {"lipsum", unsupportedGlobal("lipsum")},
  };
  auto it = globals.find(name);
  return it == globals.end() ? nullptr : &it->second;
}

//===----------------------------------------------------------------------===//
// Parser: jinja2's grammar
//===----------------------------------------------------------------------===//

constexpr int kMaxParseDepth = 200;

class Parser {
public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parseTemplate() { return parseBody({}); }

private:
  // Statements up to (not including) a block tag named in `ends`.
  Body parseBody(std::initializer_list<const char *> ends) {
    Body body;
    while (true) {
      const Token &t = peek();
      if (t.kind == TokenKind::End)
        return body;
      if (t.kind == TokenKind::Data) {
        body.push_back(std::make_unique<TextStmt>(t.offset, t.text));
        next();
      } else if (t.kind == TokenKind::VariableBegin) {
        next();
        ExprPtr value = parseTuple(true, false);
        expect(TokenKind::VariableEnd, "'}}'");
        body.push_back(std::make_unique<OutputStmt>(t.offset, std::move(value)));
      } else {
        const Token &name = peekAt(1);
        for (const char *end : ends)
          if (name.kind == TokenKind::Name && name.text == end)
            return body;
        if (name.kind == TokenKind::Name &&
            (name.text.rfind("end", 0) == 0 || name.text == "elif" || name.text == "else"))
          error(name.offset, "unexpected '" + name.text + "'" +
                                 (ends.size() ? ", expected " + listOf(ends) : ""));
        body.push_back(parseStatement());
      }
    }
  }

  // A block's body and its closing tag; the error for a missing one names
  // the block that was left open.
  Body parseBlockBody(size_t openedAt, const char *opener,
                      std::initializer_list<const char *> ends) {
    Body body = parseBody(ends);
    if (peek().kind == TokenKind::End)
      error(openedAt,
            std::string("'") + opener + "' is never closed (expected " + listOf(ends) + ")");
    return body;
  }

  static std::string listOf(std::initializer_list<const char *> names) {
    std::string out;
    for (const char *name : names)
      out += std::string(out.empty() ? "'" : " or '") + name + "'";
    return out;
  }

  std::unique_ptr<Stmt> parseStatement() {
    DepthGuard guard(*this, peek().offset);
    size_t offset = next().offset; // {%
    const Token &keyword = peek();
    if (keyword.kind != TokenKind::Name)
      error(keyword.offset, "expected a tag name");
    const std::string &name = keyword.text;
    if (name == "if")
      return parseIf(offset);
    if (name == "for")
      return parseFor(offset);
    if (name == "set")
      return parseSet(offset);
    if (name == "macro")
      return parseMacro(offset);
    if (name == "break" || name == "continue") {
      if (!loopDepth_)
        error(keyword.offset, "'" + name + "' outside of a loop");
      next();
      endTag();
      return std::make_unique<LoopControlStmt>(offset,
                                               name == "break" ? Flow::Break : Flow::Continue);
    }
    if (name == "generation") {
      auto stmt = std::make_unique<GenerationStmt>(offset);
      next();
      endTag();
      stmt->body = parseFunctionBody(offset, "generation", "endgeneration");
      return stmt;
    }
    static const char *const unsupported[] = {"block", "extends", "include", "import",     "from",
                                              "call",  "filter",  "with",    "autoescape", "print",
                                              "do",    "trans",   "raw"};
    for (const char *tag : unsupported)
      if (name == tag)
        error(keyword.offset, "'{% " + name + " %}' is not supported");
    error(keyword.offset, "unknown tag '" + name + "'");
  }

  std::unique_ptr<Stmt> parseIf(size_t offset) {
    auto stmt = std::make_unique<IfStmt>(offset);
    next(); // if
    while (true) {
      ExprPtr test = parseTuple(false, false);
      endTag();
      Body body = parseBlockBody(offset, "if", {"elif", "else", "endif"});
      stmt->branches.emplace_back(std::move(test), std::move(body));
      next(); // {%
      std::string tag = next().text;
      if (tag == "elif")
        continue;
      if (tag == "else") {
        endTag();
        stmt->otherwise = parseBlockBody(offset, "if", {"endif"});
        closeTag("endif");
      } else {
        endTag();
      }
      return stmt;
    }
  }

  std::unique_ptr<Stmt> parseFor(size_t offset) {
    auto stmt = std::make_unique<ForStmt>(offset);
    next(); // for
    parseTargets(stmt->targets, stmt->unpack);
    if (!(peek().kind == TokenKind::Name && peek().text == "in"))
      error(peek().offset, "expected 'in' in for loop");
    next();
    stmt->iterable = parseTuple(false, false, "recursive");
    if (isName("if")) {
      next();
      stmt->filter = parseExpression(true);
    }
    if (isName("recursive"))
      error(peek().offset, "recursive for loops are not supported");
    endTag();
    ++loopDepth_;
    size_t loopNames = loopNames_;
    stmt->body = parseBlockBody(offset, "for", {"endfor", "else"});
    stmt->usesLoop = loopNames_ != loopNames;
    --loopDepth_;
    next(); // {%
    if (next().text == "else") {
      endTag();
      stmt->otherwise = parseBlockBody(offset, "for", {"endfor"});
      closeTag("endfor");
    } else {
      endTag();
    }
    return stmt;
  }

  // `a` or `a, b` (optionally parenthesized): names a for loop or set binds.
  void parseTargets(std::vector<std::string> &targets, bool &unpack) {
    bool parenthesized = isOperator("(");
    if (parenthesized)
      next();
    while (true) {
      if (peek().kind != TokenKind::Name)
        error(peek().offset, "expected a variable name to assign to");
      targets.push_back(next().text);
      if (!isOperator(","))
        break;
      unpack = true;
      next();
      if (!(peek().kind == TokenKind::Name) || peek().text == "in")
        break;
    }
    if (parenthesized) {
      unpack = true;
      expectOperator(")");
    }
  }

  std::unique_ptr<Stmt> parseSet(size_t offset) {
    auto stmt = std::make_unique<SetStmt>(offset);
    next(); // set
    parseTargets(stmt->targets, stmt->unpack);
    if (!stmt->unpack && isOperator(".")) {
      next();
      if (peek().kind != TokenKind::Name)
        error(peek().offset, "expected an attribute name");
      stmt->attribute = next().text;
    }
    if (isOperator("=")) {
      next();
      stmt->value = parseTuple(true, false);
      endTag();
      return stmt;
    }
    if (stmt->unpack || !stmt->attribute.empty())
      error(peek().offset, "expected '='");
    if (isOperator("|"))
      error(peek().offset, "filtered block assignments ({% set x | filter %}) are not supported");
    endTag();
    stmt->body = parseFunctionBody(offset, "set", "endset");
    return stmt;
  }

  std::unique_ptr<Stmt> parseMacro(size_t offset) {
    auto stmt = std::make_unique<MacroStmt>(offset);
    next(); // macro
    if (peek().kind != TokenKind::Name)
      error(peek().offset, "expected a macro name");
    stmt->name = next().text;
    expectOperator("(");
    while (!isOperator(")")) {
      if (!stmt->params.empty())
        expectOperator(",");
      if (isOperator(")"))
        break;
      if (peek().kind != TokenKind::Name)
        error(peek().offset, "expected a parameter name");
      std::string param = next().text;
      ExprPtr fallback;
      if (isOperator("=")) {
        next();
        fallback = parseExpression(true);
      } else if (!stmt->params.empty() && stmt->params.back().second) {
        error(peek().offset, "non-default argument follows default argument");
      }
      stmt->params.emplace_back(std::move(param), std::move(fallback));
    }
    next(); // )
    endTag();
    stmt->body = parseFunctionBody(offset, "macro", "endmacro");
    return stmt;
  }

  // The body of a macro, block set or generation tag, which jinja2 compiles
  // to a function: a loop control inside can only end a loop inside.
  Body parseFunctionBody(size_t offset, const char *opener, const char *end) {
    int loops = std::exchange(loopDepth_, 0);
    Body body = parseBlockBody(offset, opener, {end});
    loopDepth_ = loops;
    closeTag(end);
    return body;
  }

  //===--- Expressions, from the lowest precedence up ---===//

  class DepthGuard {
  public:
    DepthGuard(Parser &p, size_t offset) : p_(p) {
      if (++p_.depth_ > kMaxParseDepth)
        p_.error(offset, "nested too deeply");
    }
    ~DepthGuard() { --p_.depth_; }

  private:
    Parser &p_;
  };

  // `a, b` makes a tuple; `extraEnd` is a name that may end it.
  ExprPtr parseTuple(bool withCondExpr, bool allowEmpty, const char *extraEnd = nullptr) {
    size_t offset = peek().offset;
    std::vector<ExprPtr> items;
    bool sawComma = false;
    while (true) {
      if (!items.empty()) {
        if (!isOperator(","))
          break;
        next();
        sawComma = true;
      }
      if (isTupleEnd(extraEnd))
        break;
      items.push_back(parseExpression(withCondExpr));
    }
    if (items.empty() && !allowEmpty)
      error(peek().offset, "expected an expression, got '" + tokenText(peek()) + "'");
    if (items.size() == 1 && !sawComma)
      return std::move(items[0]);
    return std::make_unique<ListExpr>(offset, std::move(items), true);
  }

  bool isTupleEnd(const char *extraEnd) {
    const Token &t = peek();
    return t.kind == TokenKind::VariableEnd || t.kind == TokenKind::BlockEnd ||
           t.kind == TokenKind::End || (t.kind == TokenKind::Operator && t.text == ")") ||
           (extraEnd && t.kind == TokenKind::Name && t.text == extraEnd);
  }

  ExprPtr parseExpression(bool withCondExpr) {
    DepthGuard guard(*this, peek().offset);
    if (!withCondExpr)
      return parseOr();
    size_t offset = peek().offset;
    ExprPtr expr = parseOr();
    while (isName("if")) {
      next();
      ExprPtr test = parseOr();
      ExprPtr otherwise;
      if (isName("else")) {
        next();
        otherwise = parseExpression(true);
      }
      expr = std::make_unique<CondExpr>(offset, std::move(test), std::move(expr),
                                        std::move(otherwise));
    }
    return expr;
  }

  ExprPtr parseOr() {
    ExprPtr left = parseAnd();
    while (isName("or")) {
      size_t offset = next().offset;
      left = std::make_unique<LogicExpr>(offset, std::move(left), parseAnd(), false);
    }
    return left;
  }

  ExprPtr parseAnd() {
    ExprPtr left = parseNot();
    while (isName("and")) {
      size_t offset = next().offset;
      left = std::make_unique<LogicExpr>(offset, std::move(left), parseNot(), true);
    }
    return left;
  }

  ExprPtr parseNot() {
    if (isName("not")) {
      DepthGuard guard(*this, peek().offset);
      size_t offset = next().offset;
      return std::make_unique<NotExpr>(offset, parseNot());
    }
    return parseCompare();
  }

  ExprPtr parseCompare() {
    size_t offset = peek().offset;
    ExprPtr first = parseMath1();
    std::vector<std::pair<CompareOp, ExprPtr>> rest;
    static const std::pair<const char *, CompareOp> operators[] = {
        {"==", CompareOp::Eq}, {"!=", CompareOp::Ne}, {"<", CompareOp::Lt},
        {"<=", CompareOp::Le}, {">", CompareOp::Gt},  {">=", CompareOp::Ge}};
    while (true) {
      std::optional<CompareOp> op;
      for (const auto &[text, o] : operators)
        if (isOperator(text))
          op = o;
      if (op) {
        next();
      } else if (isName("in")) {
        next();
        op = CompareOp::In;
      } else if (isName("not") && peekAt(1).kind == TokenKind::Name && peekAt(1).text == "in") {
        next();
        next();
        op = CompareOp::NotIn;
      } else {
        break;
      }
      rest.emplace_back(*op, parseMath1());
    }
    if (rest.empty())
      return first;
    return std::make_unique<CompareExpr>(offset, std::move(first), std::move(rest));
  }

  ExprPtr parseMath1() {
    ExprPtr left = parseConcat();
    while (isOperator("+") || isOperator("-")) {
      const Token &t = next();
      left = std::make_unique<BinaryExpr>(t.offset, t.text == "+" ? BinaryOp::Add : BinaryOp::Sub,
                                          std::move(left), parseConcat());
    }
    return left;
  }

  ExprPtr parseConcat() {
    size_t offset = peek().offset;
    std::vector<ExprPtr> parts;
    parts.push_back(parseMath2());
    while (isOperator("~")) {
      next();
      parts.push_back(parseMath2());
    }
    if (parts.size() == 1)
      return std::move(parts[0]);
    return std::make_unique<ConcatExpr>(offset, std::move(parts));
  }

  ExprPtr parseMath2() {
    ExprPtr left = parsePow();
    static const std::pair<const char *, BinaryOp> operators[] = {{"*", BinaryOp::Mul},
                                                                  {"/", BinaryOp::Div},
                                                                  {"//", BinaryOp::FloorDiv},
                                                                  {"%", BinaryOp::Mod}};
    while (true) {
      std::optional<BinaryOp> op;
      for (const auto &[text, o] : operators)
        if (isOperator(text))
          op = o;
      if (!op)
        return left;
      size_t offset = next().offset;
      left = std::make_unique<BinaryExpr>(offset, *op, std::move(left), parsePow());
    }
  }

  ExprPtr parsePow() {
    ExprPtr left = parseUnary(true);
    while (isOperator("**")) {
      size_t offset = next().offset;
      left = std::make_unique<BinaryExpr>(offset, BinaryOp::Pow, std::move(left), parseUnary(true));
    }
    return left;
  }

  // A primary with its postfixes (.attr, [key], (args)) and then filters and
  // tests; `-x|f` filters -x.
  ExprPtr parseUnary(bool withFilter) {
    DepthGuard guard(*this, peek().offset);
    ExprPtr node;
    if (isOperator("-") || isOperator("+")) {
      const Token &t = next();
      node = std::make_unique<NegExpr>(t.offset, parseUnary(false), t.text == "-");
    } else {
      node = parsePrimary();
    }
    node = parsePostfix(std::move(node));
    if (withFilter)
      node = parseFilters(std::move(node));
    return node;
  }

  ExprPtr parsePrimary() {
    const Token &t = peek();
    switch (t.kind) {
    case TokenKind::Name: {
      next();
      if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False")
        return std::make_unique<ConstExpr>(t.offset,
                                           Value::boolean(t.text[0] == 't' || t.text[0] == 'T'));
      if (t.text == "none" || t.text == "None")
        return std::make_unique<ConstExpr>(t.offset, Value::none());
      loopNames_ += t.text == "loop";
      return std::make_unique<NameExpr>(t.offset, t.text);
    }
    case TokenKind::String: {
      // Adjacent string literals join, as in Python.
      std::string text;
      while (peek().kind == TokenKind::String)
        text += next().text;
      return std::make_unique<ConstExpr>(t.offset, Value::string(std::move(text)));
    }
    case TokenKind::Integer:
      next();
      return std::make_unique<ConstExpr>(t.offset, Value::integer(t.integer));
    case TokenKind::Float:
      next();
      return std::make_unique<ConstExpr>(t.offset, Value::number(t.number));
    case TokenKind::Operator:
      if (t.text == "(") {
        next();
        ExprPtr inner = parseTuple(true, true);
        expectOperator(")");
        return inner;
      }
      if (t.text == "[") {
        next();
        std::vector<ExprPtr> items;
        while (!isOperator("]")) {
          if (!items.empty())
            expectOperator(",");
          if (isOperator("]"))
            break;
          items.push_back(parseExpression(true));
        }
        next();
        return std::make_unique<ListExpr>(t.offset, std::move(items), false);
      }
      if (t.text == "{") {
        next();
        std::vector<std::pair<ExprPtr, ExprPtr>> items;
        while (!isOperator("}")) {
          if (!items.empty())
            expectOperator(",");
          if (isOperator("}"))
            break;
          ExprPtr key = parseExpression(true);
          expectOperator(":");
          items.emplace_back(std::move(key), parseExpression(true));
        }
        next();
        return std::make_unique<DictExpr>(t.offset, std::move(items));
      }
      break;
    default:
      break;
    }
    error(t.offset, "unexpected '" + tokenText(t) + "'");
  }

  ExprPtr parsePostfix(ExprPtr node) {
    while (true) {
      if (isOperator(".")) {
        size_t offset = next().offset;
        const Token &t = next();
        if (t.kind == TokenKind::Name)
          node = std::make_unique<AttrExpr>(offset, std::move(node), t.text);
        else if (t.kind == TokenKind::Integer)
          node = std::make_unique<ItemExpr>(
              offset, std::move(node),
              std::make_unique<ConstExpr>(t.offset, Value::integer(t.integer)));
        else
          error(t.offset, "expected an attribute name after '.'");
      } else if (isOperator("[")) {
        node = parseSubscript(std::move(node));
      } else if (isOperator("(")) {
        size_t offset = peek().offset;
        node = std::make_unique<CallExpr>(offset, std::move(node), parseCallArgs());
      } else {
        return node;
      }
    }
  }

  ExprPtr parseSubscript(ExprPtr node) {
    size_t offset = next().offset; // [
    std::array<ExprPtr, 3> parts;  // start, stop, step
    int colons = 0;
    while (!isOperator("]")) {
      if (isOperator(":")) {
        if (++colons > 2)
          error(peek().offset, "too many ':' in slice");
        next();
      } else if (!parts[colons]) {
        parts[colons] = parseExpression(true);
      } else {
        error(peek().offset,
              isOperator(",") ? "tuple subscripts are not supported" : "expected ']'");
      }
    }
    next(); // ]
    if (colons == 0) {
      if (!parts[0])
        error(offset, "empty subscript");
      return std::make_unique<ItemExpr>(offset, std::move(node), std::move(parts[0]));
    }
    return std::make_unique<SliceExpr>(offset, std::move(node), std::move(parts[0]),
                                       std::move(parts[1]), std::move(parts[2]));
  }

  std::vector<Argument> parseCallArgs() {
    expectOperator("(");
    std::vector<Argument> args;
    bool keywords = false;
    while (!isOperator(")")) {
      if (!args.empty())
        expectOperator(",");
      if (isOperator(")"))
        break;
      if (isOperator("*") || isOperator("**"))
        error(peek().offset, "argument unpacking (*args, **kwargs) is not supported");
      if (peek().kind == TokenKind::Name && peekAt(1).kind == TokenKind::Operator &&
          peekAt(1).text == "=") {
        std::string keyword = next().text;
        next();
        args.push_back({keyword, parseExpression(true)});
        keywords = true;
      } else {
        if (keywords)
          error(peek().offset, "positional argument follows keyword argument");
        args.push_back({"", parseExpression(true)});
      }
    }
    next(); // )
    return args;
  }

  // `| filter(args)` and `is [not] test args`, in any order and number.
  ExprPtr parseFilters(ExprPtr node) {
    while (true) {
      if (isOperator("|")) {
        next();
        const Token &t = peek();
        std::string name = dottedName();
        const FilterFn *filter = findFilter(name);
        if (!filter)
          error(t.offset, "filter '" + name + "' is not supported");
        std::vector<Argument> args;
        if (isOperator("("))
          args = parseCallArgs();
        node = std::make_unique<FilterExpr>(t.offset, std::move(node), *filter, std::move(args));
      } else if (isName("is")) {
        next();
        bool negated = isName("not");
        if (negated)
          next();
        const Token &t = peek();
        std::string name = dottedName();
        const TestFn *test = findTest(name);
        if (!test)
          error(t.offset, "test '" + name + "' is not supported");
        std::vector<Argument> args;
        if (isOperator("(")) {
          args = parseCallArgs();
        } else if (startsTestArgument()) {
          // `x is divisibleby 3`: one argument without parentheses.
          ExprPtr arg = parsePostfix(parsePrimary());
          args.push_back({"", std::move(arg)});
        }
        node =
            std::make_unique<TestExpr>(t.offset, std::move(node), *test, std::move(args), negated);
      } else if (isOperator("(")) {
        size_t offset = peek().offset;
        node = std::make_unique<CallExpr>(offset, std::move(node), parseCallArgs());
      } else {
        return node;
      }
    }
  }

  bool startsTestArgument() {
    const Token &t = peek();
    if (t.kind == TokenKind::Name) {
      if (t.text == "is")
        error(t.offset, "tests cannot be chained with 'is'");
      return t.text != "else" && t.text != "or" && t.text != "and";
    }
    return t.kind == TokenKind::String || t.kind == TokenKind::Integer ||
           t.kind == TokenKind::Float ||
           (t.kind == TokenKind::Operator && (t.text == "[" || t.text == "{"));
  }

  std::string dottedName() {
    if (peek().kind != TokenKind::Name)
      error(peek().offset, "expected a name, got '" + tokenText(peek()) + "'");
    std::string name = next().text;
    while (isOperator(".") && peekAt(1).kind == TokenKind::Name) {
      next();
      name += "." + next().text;
    }
    return name;
  }

  //===--- Token stream ---===//

  const Token &peek() const { return tokens_[pos_]; }
  const Token &peekAt(size_t ahead) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token &next() {
    const Token &t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size())
      ++pos_;
    return t;
  }
  bool isName(const char *name) const {
    return peek().kind == TokenKind::Name && peek().text == name;
  }
  bool isOperator(const char *op) const {
    return peek().kind == TokenKind::Operator && peek().text == op;
  }

  static std::string tokenText(const Token &t) {
    switch (t.kind) {
    case TokenKind::Data:
      return "text";
    case TokenKind::VariableBegin:
      return "{{";
    case TokenKind::VariableEnd:
      return "}}";
    case TokenKind::BlockBegin:
      return "{%";
    case TokenKind::BlockEnd:
      return "%}";
    case TokenKind::String:
      return pyQuote(t.text);
    case TokenKind::End:
      return "end of template";
    default:
      return t.text;
    }
  }

  void expect(TokenKind kind, const char *what) {
    if (peek().kind != kind)
      error(peek().offset, std::string("expected ") + what + ", got '" + tokenText(peek()) + "'");
    next();
  }
  void expectOperator(const char *op) {
    if (!isOperator(op))
      error(peek().offset, std::string("expected '") + op + "', got '" + tokenText(peek()) + "'");
    next();
  }
  void endTag() { expect(TokenKind::BlockEnd, "end of tag '%}'"); }
  void closeTag(const char *name) {
    next(); // {%
    if (!isName(name))
      error(peek().offset, std::string("expected '") + name + "'");
    next();
    endTag();
  }

  [[noreturn]] void error(size_t offset, std::string message) {
    throw SyntaxError{offset, std::move(message)};
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loopDepth_ = 0;    // for loops around the statement being parsed
  size_t loopNames_ = 0; // `loop` variables read so far
};

// jinja2 reads "\r\n" and "\r" as "\n" everywhere, and drops one newline at
// the very end (keep_trailing_newline is off).
std::string normalizeNewlines(const std::string &source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n')
        ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

} // namespace

struct ChatTemplate::Program {
  std::string source; // normalized, for the positions in errors
  Body body;
};

ChatTemplate::ChatTemplate(const std::string &source) {
  size_t bad = firstInvalidUtf8(source);
  if (bad != source.size())
    throw TokenizerError("chat template: invalid UTF-8 at byte " + std::to_string(bad));
  auto program = std::make_unique<Program>();
  program->source = normalizeNewlines(source);
  try {
    program->body = Parser(Lexer(program->source).run()).parseTemplate();
  } catch (const SyntaxError &e) {
    throw TokenizerError(describePosition(program->source, e.offset) + e.message);
  }
  program_ = std::move(program);
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate &&) noexcept = default;
ChatTemplate &ChatTemplate::operator=(ChatTemplate &&) noexcept = default;

std::string ChatTemplate::render(const nlohmann::ordered_json &context) const {
  if (!context.is_object())
    throw TokenizerError("chat template context must be a JSON object");
  try {
    auto root = std::make_shared<Scope>(nullptr);
    for (const auto &[key, value] : context.items()) {
      try {
        root->vars.items.emplace_back(key, fromJson(value, 0));
      } catch (const ContextError &e) {
        throw TokenizerError("chat template context: " + key + e.path + ": " + e.message);
      }
    }
    Interpreter interpreter(program_->source);
    std::string out;
    interpreter.render(program_->body, root, out);
    return out;
  } catch (const RaisedError &e) {
    throw TokenizerError(e.message);
  } catch (const RenderError &e) {
    throw TokenizerError("chat template: " + e.message);
  }
}

} // namespace kiln::tok
