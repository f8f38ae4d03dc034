//===- ChatTemplateTest.cpp - Chat templates as transformers renders them -===//
//
// Real chat templates (test/tokenizer/chat_templates/*.jinja) rendered on
// every conversation of cases.json must match expected.json, which
// scripts/tokenizers/render_chat.mjs wrote with @huggingface/jinja, byte for
// byte. Then the rules one at a time, each expectation being what Python's
// jinja2 renders in transformers' configuration (the reference transformers
// itself is), and the errors: unsupported and malformed templates, run-time
// failures, and the limits that stop runaway templates.
//
//===----------------------------------------------------------------------===//
#include "ChatTemplate.h"
#include "TokenizerError.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Json = nlohmann::ordered_json;
using kiln::tok::ChatTemplate;
using kiln::tok::TokenizerError;

std::string dataDir() {
  if (const char *dir = std::getenv("KILN_CHAT_TEMPLATE_DIR"))
    return dir;
  std::string here = __FILE__;
  return here.substr(0, here.find_last_of('/') + 1) + "../tokenizer/chat_templates";
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path + " (set KILN_CHAT_TEMPLATE_DIR)");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The output, or "error: " and the message.
std::string render(const std::string &source, const Json &context = Json::object()) {
  try {
    return ChatTemplate(source).render(context);
  } catch (const TokenizerError &e) {
    return std::string("error: ") + e.what();
  }
}

struct Expectation {
  const char *source, *output;
  const char *context = "{}";
};

void expectRenders(std::initializer_list<Expectation> expectations) {
  for (const Expectation &e : expectations)
    EXPECT_EQ(render(e.source, Json::parse(e.context)), e.output) << "template: " << e.source;
}

TEST(ChatTemplateReference, RealTemplatesMatchHuggingFaceJinja) {
  std::string dir = dataDir();
  Json cases = Json::parse(readFile(dir + "/cases.json"));
  Json expected = Json::parse(readFile(dir + "/expected.json"));
  size_t compared = 0, outputs = 0, raised = 0;
  for (const auto &[name, variables] : cases["templates"].items()) {
    ChatTemplate chat(readFile(dir + "/" + name + ".jinja"));
    for (const Json &c : cases["cases"]) {
      const std::string &caseName = c["name"].get_ref<const std::string &>();
      if (c.contains("templates") &&
          std::find(c["templates"].begin(), c["templates"].end(), name) == c["templates"].end())
        continue;
      SCOPED_TRACE(name + " / " + caseName);
      ASSERT_TRUE(expected.contains(name) && expected[name].contains(caseName))
          << "expected.json lacks this case: run scripts/tokenizers/render_chat.mjs";
      Json context = cases["defaults"];
      context.update(variables);
      context.update(c["context"]);
      const Json &want = expected[name][caseName];
      ++compared;
      try {
        std::string got = chat.render(context);
        ASSERT_TRUE(want.contains("output"))
            << "the reference failed: " << want.dump() << "\nKiln rendered:\n"
            << got;
        EXPECT_EQ(got, want["output"].get<std::string>());
        ++outputs;
      } catch (const TokenizerError &e) {
        if (want.contains("raised")) {
          // raise_exception's message is the whole error, for the user.
          EXPECT_EQ(e.what(), want["raised"].get<std::string>());
          ++raised;
        } else {
          EXPECT_TRUE(want.contains("error"))
              << "Kiln failed where the reference rendered: " << e.what();
        }
      }
    }
  }
  size_t listed = 0;
  for (const auto &entry : expected.items())
    listed += entry.value().size();
  EXPECT_EQ(compared, listed) << "expected.json holds cases that cases.json no longer has";
  EXPECT_GE(cases["templates"].size(), 20u);
  std::printf("compared %zu renders: %zu outputs, %zu raise_exception messages, %zu other errors\n",
              compared, outputs, raised, compared - outputs - raised);
}

TEST(ChatTemplateRules, Whitespace) {
  // trim_blocks and lstrip_blocks, as transformers sets them, then the
  // explicit -/+ modifiers; "\r\n" reads as "\n" and one final newline goes.
  expectRenders({
      {"a\n  {% if true %}\n    b\n  {% endif %}\nc", "a\n    b\nc"},
      {"  {% for i in [1, 2] %}\n  x{{ i }}\n  {% endfor %}", "  x1\n  x2\n"},
      {"{% if true %}  \na{% endif %}", "  \na"},
      {"  {{ 'v' }}\n  {% if true %}t{% endif %}  {# c #}\n    {# comment #}\nz", "  v\nt  z"},
      {"a  {%- if true -%}  b  {%- endif -%}  c", "abc"},
      {"a\n{%+ if true %}\nb\n{% endif +%}\nc", "a\nb\n\nc"},
      {"{{- ' x ' -}}   {{ 'y' }}", " x y"},
      {"{%- for m in ['a', 'b'] %}\n    {{- m }}\n{%- endfor %}\nend\n", "abend"},
      {"a{#-\n multi\n line\n-#}\n  b", "ab"},
      {"x {% if true %}y{% endif %} z\n  {% if true %}w{% endif %}", "x y z\nw"},
      {"r1\r\nr2\r\n{%- if true %}\r\nr3\r\n{%- endif %}\r\n", "r1\nr2r3"},
      {"{{ '{{ x }}' }}{{ {'a': {'b': 1}}}}", "{{ x }}{'a': {'b': 1}}"},
  });
}

TEST(ChatTemplateRules, PythonValues) {
  // Printing and literals follow Python: str() of None and booleans, repr()
  // inside containers, float repr, and string escapes decoded as
  // unicode_escape does (an unknown one keeps its backslash).
  expectRenders({
      {"{{ none }}|{{ true }}|{{ False }}|{{ [1, 'a', none] }}|{{ {'k': \"it's\", 'n': [true]} "
       "}}|{{ (1,) }}|{{ (1, 'b') }}|{{ 1, 2 }}",
       "None|True|False|[1, 'a', None]|{'k': \"it's\", 'n': [True]}|(1,)|(1, 'b')|(1, 2)"},
      {"{{ 1.0 }}|{{ 1e3 }}|{{ 2.5e-7 }}|{{ 1e16 }}|{{ 1e15 }}|{{ 0.0001 }}|{{ 0.1 + 0.2 }}|{{ "
       "-0.0 }}|{{ 1e300 * 1e10 }}|{{ 10 / 4 }}",
       "1.0|1000.0|2.5e-07|1e+16|1000000000000000.0|0.0001|0.30000000000000004|-0.0|inf|2.5"},
      {"{{ 1_000 }}|{{ 0x1F }}|{{ 0o17 }}|{{ 0b101 }}|{{ 'a' 'b' \"c\" }}|{{ 'tab\\there' }}|{{ "
       "'\\x41\\u00e9\\101' }}|{{ 'keep\\q' }}",
       "1000|31|15|5|abc|tab\there|AéA|keep\\q"},
      {"{{ ['it\\'s', 'say \"hi\"', 'both \\' \"', 'tab\\t\\x7f\\xa0é'] }}",
       "[\"it's\", 'say \"hi\"', 'both \\' \"', 'tab\\t\\x7f\\xa0é']"},
  });
}

TEST(ChatTemplateRules, Operators) {
  expectRenders({
      {"{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ -7 % 3 }} {{ -7.5 // 2 }} {{ 7.5 % -2 }} {{ 2 "
       "** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }}",
       "3 -4 -2 2 -4.0 -0.5 1024 0.5 64 4"},
      {"{{ 3 * 'ab' }}|{{ [0] * 2 }}|{{ 'x' * -1 }}|{{ 'a' ~ 1 ~ none ~ true ~ [1] ~ missing }}|{{ "
       "[1] + [2] }}",
       "ababab|[0, 0]||a1NoneTrue[1]|[1, 2]"},
      {"{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 == true }} {{ (1, 2) == [1, 2] }} {{ {'a': 1, "
       "'b': 2} == {'b': 2, 'a': 1} }} {{ [1, 2] < [1, 3] }} {{ 'b' >= 'a' }}",
       "True False True False True True True"},
      {"{{ 'a' in 'abc' }} {{ 'z' not in 'abc' }} {{ 1 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ [1] "
       "in [[1]] }} {{ 'a' in missing }}",
       "True True True True True False"},
      {"{{ 1 and 2 }}|{{ 0 and 2 }}|{{ 0 or '' }}|{{ none or 'd' }}|{{ not [] }}|{{ 'a' if 1 else "
       "'b' }}|{{ 'a' if 0 }}|{{ 'a' if 0 else 'b' if 0 else 'c' }}",
       "2|0||d|True|a||c"},
  });
}

TEST(ChatTemplateRules, Undefined) {
  // jinja2's default Undefined: empty, false and iterable as nothing, but
  // any further use fails (see ChatTemplateErrors.RunTime).
  expectRenders({
      {"[{{ missing }}]{{ missing is defined }}{{ missing is undefined }}{{ missing | default('d') "
       "}}{{ none | default('d') }}{{ '' | default('d', true) }}",
       "[]FalseTruedNoned"},
      {"{{ missing | length }}{{ missing | list }}[{{ missing | trim }}{{ missing | join }}{{ "
       "missing | string }}]{{ missing == missing }}{{ not missing }}{{ missing is iterable }}",
       "0[][]TrueTrueTrue"},
      {"[{{ none.attribute }}]{{ (none.attribute) is defined }}{{ {'a': 1}.b is defined }}{{ "
       "[1][3] is defined }}{{ 'abc'.nope is defined }}{% for x in missing %}x{% else %}empty{% "
       "endfor %}",
       "[]FalseFalseFalseFalseempty"},
  });
}

TEST(ChatTemplateRules, Loops) {
  expectRenders({
      {"{% for i in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 "
       "}}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.cycle('x', 'y') }}{{ "
       "loop.previtem }}{{ loop.nextitem }}|{% endfor %}",
       "1032TrueFalse3xb|2121FalseFalse3yac|3210FalseTrue3xb|"},
      {"{% for i in range(7) if i is odd %}{{ i }}:{{ loop.index }}/{{ loop.length }} {% else "
       "%}none{% endfor %}|{% for i in [] %}x{% else %}empty{% endfor %}",
       "1:1/3 3:2/3 5:3/3 |empty"},
      {"{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break "
       "%}{% endif %}{{ i }}{% endfor %}",
       "0134"},
      {"{% for a in [1, 2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }} {% endfor %}{{ "
       "loop.index }};{% endfor %}",
       "1x1 1y2 1;2x1 2y2 2;"},
      {"{% for k, v in {'b': 1, 'a': 2}.items() %}{{ k }}={{ v }} {% endfor %}{% for k in {'b': 1, "
       "'a': 2} %}{{ k }}{% endfor %} {% for k, v in {'b': 1, 'A': 2, 'c': 0} | dictsort %}{{ k "
       "}}{% endfor %}",
       "b=1 a=2 ba Abc"},
      {"{% for x in [[1, 2], [3, 4]] %}{% for a, b in [x] %}{{ a + b }}{% endfor %}{% endfor %}{% "
       "for (a, b) in [(5, 6)] %}{{ a * b }}{% endfor %}",
       "3730"},
  });
}

TEST(ChatTemplateRules, Scoping) {
  // A `set` in a loop body lasts one iteration; a namespace carries state
  // out of it.
  expectRenders({
      {"{% set x = 0 %}{% for i in range(3) %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}",
       "0120"},
      {"{% for i in range(2) %}{% set y = i %}{% endfor %}[{{ y }}]", "[]"},
      {"{% set ns = namespace(x=0, seen=[]) %}{% for i in range(4) %}{% set ns.x = ns.x + i %}{% "
       "set ns.seen = ns.seen + [i] %}{% endfor %}{{ ns.x }}{{ ns.seen }}{{ ns }}",
       "6[0, 1, 2, 3]<Namespace {'x': 6, 'seen': [0, 1, 2, 3]}>"},
      {"{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set (c, d) = [3, 4] %}{{ c }}{{ d }}{% set t = 1, "
       "%}{{ t }}",
       "1234(1,)"},
      {"{% set s %}block {{ 1 + 1 }}{% endset %}[{{ s }}]{{ s | length }}", "[block 2]7"},
      {"{% if true %}{% set top = 'visible' %}{% endif %}{{ top }}{% for i in [1] %}{% generation "
       "%}[{{ i }}]{% endgeneration %}{% endfor %}",
       "visible[1]"},
      {"{% set messages = messages[1:] %}{{ messages | length }}", "2",
       "{\"messages\": [1, 2, 3]}"},
  });
}

TEST(ChatTemplateRules, Macros) {
  expectRenders({
      {"{% macro m(a, b=2, c=a) %}{{ a }}-{{ b }}-{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, 3) }}|{{ "
       "m(1, c=5) }}|{{ m(b=7, a=8) }}|{{ m() }}",
       "1-2-1|1-3-1|1-2-5|8-7-8|-2-"},
      {"{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1) | int }}{% endif %}{% "
       "endmacro %}{{ fact(6) }}",
       "720"},
      {"{% macro m() %}{{ v }}{% endmacro %}{% set v = 1 %}{{ m() }}{% for v in [5] %}{{ m() }}{% "
       "endfor %}",
       "11"},
      {"{% macro item(x) -%}\n  <{{ x }}>\n{%- endmacro %}{{ item('a') + item('b') }}", "<a><b>"},
  });
}

TEST(ChatTemplateRules, StringAndDictMethods) {
  expectRenders({
      {"{{ '  a  '.strip() }}|{{ '  a  '.lstrip() }}|{{ '  a  '.rstrip() }}|{{ 'abcba'.strip('ab') "
       "}}|{{ '\\u3000a\\u00a0'.strip() }}",
       "a|a  |  a|c|a"},
      {"{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(none, 1) }}|{{ "
       "'a,b,c'.split(',', 1) }}|{{ ''.split() }}|{{ ''.split(',') }}",
       "['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|['a', 'b,c']|[]|['']"},
      {"{{ 'Hello'.startswith('He') }}{{ 'Hello'.endswith('lo') }}{{ 'Hello'.startswith(('x', "
       "'H')) }}{{ 'Hello'.endswith('x') }}",
       "TrueTrueTrueFalse"},
      {"{{ 'hello wORLD'.upper() }}|{{ 'HeLLo'.lower() }}|{{ \"they're bill's\".title() }}|{{ "
       "'hELLO world'.capitalize() }}|{{ 'éa ça'.upper() }}",
       "HELLO WORLD|hello|They'Re Bill'S|Hello world|ÉA ÇA"},
      {"{{ 'aaa'.replace('a', 'b') }}|{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'ab'.replace('', '-') "
       "}}|{{ ', '.join(['a', 'b']) }}",
       "bbb|bba|-a-b-|a, b"},
      {"{{ d.get('a') }}|{{ d.get('z', 9) }}|{{ d.get('z') }}|{{ d['items'] }}|{{ d.keys() | list "
       "}}|{{ d.values() | list }}|{{ d.items() | list }}",
       "1|9|None|I|['a', 'items']|[1, 'I']|[('a', 1), ('items', 'I')]",
       "{\"d\": {\"a\": 1, \"items\": \"I\"}}"},
  });
}

TEST(ChatTemplateRules, Filters) {
  expectRenders({
      {"{{ '  a b  ' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 'hello world-x(y)' | title }}|{{ "
       "'hELLO' | capitalize }}|{{ 'ab' | upper }}|{{ 42 | lower }}",
       "a b|a|Hello World-X(Y)|Hello|AB|42"},
      {"{{ ['a', 1, none] | join(', ') }}|{{ [{'n': 'x'}, {'n': 'y'}] | join('-', attribute='n') "
       "}}|{{ 'abc' | join('.') }}|{{ 'aaa' | replace('a', 'bb', 1) }}",
       "a, 1, None|x-y|a.b.c|bbaa"},
      {"{{ [3, 1, 2] | sort }}|{{ [3, 1, 2] | sort(reverse=true) }}|{{ ['b', 'A', 'c'] | sort "
       "}}|{{ [{'n': 2}, {'n': 1}] | sort(attribute='n') }}|{{ ['a', 'A', 'b', 'a'] | unique | "
       "list }}",
       "[1, 2, 3]|[3, 2, 1]|['A', 'b', 'c']|[{'n': 1}, {'n': 2}]|['a', 'b']"},
      {"{{ [1, 2, 3] | first }}|{{ [1, 2, 3] | last }}|[{{ [] | first }}]|{{ 'abc' | last }}|{{ "
       "[1, 2] | reverse | list }}|{{ 'abc' | reverse }}|{{ 'héllo' | length }}|{{ {'a': 1} | "
       "count }}|{{ 'ab' | list }}",
       "1|3|[]|c|[2, 1]|cba|5|1|['a', 'b']"},
      {"{{ 3.7 | int }}|{{ ' 42 ' | int }}|{{ '4.9' | int }}|{{ 'x' | int(7) }}|{{ true | int "
       "}}|{{ '3.5' | float }}|{{ 'x' | float }}|{{ 3 | string }}",
       "3|42|4|7|1|3.5|0.0|3"},
      {"{{ 2.5 | round }}|{{ 3.5 | round }}|{{ 2.675 | round(2) }}|{{ 3 | round }}|{{ 1.2345 | "
       "round(2, 'floor') }}|{{ 1.2345 | round(1, 'ceil') }}|{{ -3 | abs }}",
       "2.0|4.0|2.67|3|1.23|1.3|3"},
      {"{{ [1, 2, 3] | sum }}|{{ [{'v': 1}, {'v': 2}] | sum(attribute='v') }}|{{ [3, 1, 2] | max "
       "}}|{{ ['b', 'A'] | min }}|{{ {'b': 1, 'a': 2} | items | list }}",
       "6|3|3|A|[('b', 1), ('a', 2)]"},
      {"{{ [{'a': 1}, {'a': 2}, {}] | map(attribute='a') | list }}|{{ [{'a': 1}, {}] | "
       "map(attribute='a', default=0) | list }}|{{ ['a', 'b'] | map('upper') | list }}",
       "[1, 2, Undefined]|[1, 0]|['A', 'B']"},
      {"{{ [1, 2, 3, 4] | select('even') | list }}|{{ [1, 2, 3, 4] | reject('even') | list }}|{{ "
       "[0, 1, '', 'a'] | select | list }}|{{ [1, 5, 10] | select('gt', 3) | list }}|{{ ['a', 'b'] "
       "| reject('equalto', 'a') | list }}",
       "[2, 4]|[1, 3]|[1, 'a']|[5, 10]|['b']"},
      {"{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='c') | list }}|{{ msgs | "
       "rejectattr('role', 'equalto', 'user') | list }}|{{ msgs | selectattr('c') | list | length "
       "}}",
       "['1', '3']|[{'role': 'bot', 'c': ''}]|2",
       "{\"msgs\": [{\"role\": \"user\", \"c\": \"1\"}, {\"role\": \"bot\", \"c\": \"\"}, "
       "{\"role\": \"user\", \"c\": \"3\"}]}"},
      {"{{ \"abc\\ndef\\n\\nghi\" | indent }}|{{ \"abc\\ndef\" | indent(2, true) }}|{{ "
       "\"abc\\n\\ndef\\n\" | indent(width='> ', blank=true) }}|{{ '' | indent(first=true) }}",
       "abc\n    def\n\n    ghi|  abc\n  def|abc\n> \n> def\n> |    "},
  });
}

TEST(ChatTemplateRules, Tojson) {
  // transformers' tojson is json.dumps with ensure_ascii off: Python's
  // separators (", " and ": ", or "," with an indent), nothing HTML-escaped.
  expectRenders({
      {"{{ {'a': 1, 'b': [1, 2.5, 'é\"\\n\\u0001'], 'c': none, 'd': true} | tojson }}",
       "{\"a\": 1, \"b\": [1, 2.5, \"é\\\"\\n\\u0001\"], \"c\": null, \"d\": true}"},
      {"{{ {'b': 1, 'a': {'y': [1, {'z': []}], 'e': {}}} | tojson(indent=2) }}",
       "{\n  \"b\": 1,\n  \"a\": {\n    \"y\": [\n      1,\n      {\n        \"z\": []\n      }\n  "
       "  ],\n    \"e\": {}\n  }\n}"},
      {"{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}|{{ {'b': 1, 'a': [1, 2]} | "
       "tojson(separators=(',', ':')) }}|{{ [1] | tojson(indent='\\t') }}|{{ 'é😀' | "
       "tojson(ensure_ascii=true) }}|{{ (1, 'a') | tojson }}|{{ 1.0 | tojson }}",
       "{\"a\": 2, \"b\": 1}|{\"b\":1,\"a\":[1,2]}|[\n\t1\n]|\"\\u00e9\\ud83d\\ude00\"|[1, "
       "\"a\"]|1.0"},
  });
}

TEST(ChatTemplateRules, Tests) {
  expectRenders({
      {"{{ 5 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 'a' is "
       "string }}{{ 1 is number }}{{ true is number }}{{ 1.0 is float }}{{ true is integer }}{{ 1 "
       "is integer }}{{ true is boolean }}",
       "TrueTrueTrueFalseTrueTrueTrueTrueFalseTrueTrue"},
      {"{{ {} is mapping }}{{ [] is mapping }}{{ 'a' is iterable }}{{ 1 is iterable }}{{ {} is "
       "sequence }}{{ none is sequence }}{{ true is true }}{{ 1 is true }}{{ none is none }}{{ 1 "
       "is not none }}",
       "TrueFalseTrueFalseTrueFalseTrueFalseTrueTrue"},
      {"{{ 1 is eq 1 }}{{ 1 is equalto 2 }}{{ 2 is gt 1 }}{{ 2 is lt 1 }}{{ 2 is ge 2 }}{{ 1 is ne "
       "2 }}{{ 1 is in [1] }}{{ none is sameas none }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ "
       "'1' is lower }}{{ range is callable }}",
       "TrueFalseTrueFalseTrueTrueTrueTrueTrueTrueFalseTrue"},
  });
}

TEST(ChatTemplateRules, SubscriptsAndGlobals) {
  expectRenders({
      {"{{ 'abc'[0] }}{{ 'abc'[-1] }}{{ 'abc'[1:] }}{{ 'abc'[:-1] }}{{ 'abc'[::-1] }}{{ "
       "'abcdef'[1:5:2] }}{{ 'héllo'[1] }}{{ 'héllo'[1:3] }}",
       "acbcabcbabdéél"},
      {"{{ [1, 2, 3][1:] }}{{ [1, 2, 3][-2:] }}{{ [1, 2, 3][5:] }}{{ [1, 2, 3, 4][-1:0:-1] }}{{ "
       "(1, 2, 3)[1:] }}{{ [1, 2].0 }}{{ {'a': [1]}.a.0 }}{{ {'a': {'b': 'c'}}['a'].b }}",
       "[2, 3][2, 3][][4, 3, 2](2, 3)11c"},
      {"{{ range(3) | list }}{{ range(1, 4) | list }}{{ range(10, 0, -3) | list }}{{ "
       "namespace(a=1).a }}{{ namespace({'b': 2}).b }}{{ dict(a=1, b=2) }}",
       "[0, 1, 2][1, 2, 3][10, 7, 4, 1]12{'a': 1, 'b': 2}"},
  });
}

TEST(ChatTemplateRules, ContextKeepsKeyOrder) {
  // A tool schema prints its keys in the order the request gave them.
  Json tool = Json::parse(
      R"({"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}})");
  EXPECT_EQ(
      render("{{ tool | tojson }}", {{"tool", tool}}),
      R"({"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}})");
  EXPECT_EQ(
      render("{{ x }} {{ y }} {{ z | tojson }}", {{"x", 2.5}, {"y", -7}, {"z", {1, "a", nullptr}}}),
      "2.5 -7 [1, \"a\", null]");
}

TEST(ChatTemplateRules, StrftimeNow) {
  char year[8];
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(year, sizeof year, "%Y", &local);
  EXPECT_EQ(render("{{ strftime_now('%Y') }}|{{ strftime_now('') }}|{{ strftime_now('%%') }}"),
            std::string(year) + "||%");
}

TEST(ChatTemplateRules, RendersFromManyThreads) {
  ChatTemplate chat("{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}{% endfor %}");
  Json context = Json::parse(
      R"({"messages": [{"role": "user", "content": " hi "}, {"role": "bot", "content": "yo"}]})");
  std::vector<std::thread> threads;
  std::vector<std::string> outputs(8);
  for (size_t i = 0; i < outputs.size(); ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < 200; ++k)
        outputs[i] = chat.render(context);
    });
  for (auto &t : threads)
    t.join();
  for (const std::string &out : outputs)
    EXPECT_EQ(out, "<user>hi<bot>yo");
}

TEST(ChatTemplateErrors, RaiseExceptionMessageIsTheError) {
  EXPECT_EQ(
      render("{% if true %}\n  {{ raise_exception('Roles must alternate: ' ~ 2) }}{% endif %}"),
      "error: Roles must alternate: 2");
}

TEST(ChatTemplateErrors, RunTime) {
  // The message of Python's exception, after the line and column of the
  // expression or statement that failed.
  EXPECT_EQ(render("{{ missing.attribute }}"), "error: chat template 1:11: 'missing' is undefined");
  EXPECT_EQ(render("{{ {'a': 1}.b.c }}"),
            "error: chat template 1:14: 'dict object' has no attribute 'b'");
  EXPECT_EQ(render("{{ missing + 1 }}"), "error: chat template 1:12: 'missing' is undefined");
  EXPECT_EQ(render("\n\n  {{ 'a' + 1 }}"),
            "error: chat template 3:10: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(render("{% for m in messages %}{% endfor %}", {{"messages", nullptr}}),
            "error: chat template 1:1: 'NoneType' object is not iterable");
  EXPECT_EQ(render("{{ missing | tojson }}"),
            "error: chat template 1:14: Object of type Undefined is not JSON serializable");
  EXPECT_EQ(render("{{ 1 // 0 }}"), "error: chat template 1:6: integer division or modulo by zero");
  EXPECT_EQ(render("{{ 'a' < 1 }}"),
            "error: chat template 1:4: '<' not supported between instances of 'str' and 'int'");
  EXPECT_EQ(render("{% set x = 1 %}{% set x.y = 2 %}"),
            "error: chat template 1:16: cannot assign attribute on non-namespace object");
  EXPECT_EQ(render("{{ [].append(1) }}"),
            "error: chat template 1:13: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(render("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"),
            "error: chat template 1:35: macro 'm' takes not more than 1 argument(s)");
  EXPECT_EQ(render("{% for a, b in [[1, 2, 3]] %}{% endfor %}"),
            "error: chat template 1:1: too many values to unpack (expected 2)");
  EXPECT_EQ(render("{{ range(1000000) | length }}"),
            "error: chat template 1:9: Range too big. The sandbox blocks ranges larger than "
            "MAX_RANGE (100000).");
}

TEST(ChatTemplateErrors, UnsupportedConstructsNameTheirPosition) {
  EXPECT_EQ(render("Hi\n  {% include 'other.jinja' %}"),
            "error: chat template 2:6: '{% include %}' is not supported");
  EXPECT_EQ(render("{% extends 'base' %}"),
            "error: chat template 1:4: '{% extends %}' is not supported");
  EXPECT_EQ(render("{% call m() %}x{% endcall %}"),
            "error: chat template 1:4: '{% call %}' is not supported");
  EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}"),
            "error: chat template 1:1: 'raw' blocks are not supported");
  EXPECT_EQ(render("{{ x | groupby('a') }}"),
            "error: chat template 1:8: filter 'groupby' is not supported");
  EXPECT_EQ(render("{% if x is escaped %}{% endif %}"),
            "error: chat template 1:12: test 'escaped' is not supported");
  EXPECT_EQ(render("{{ f(*args) }}"),
            "error: chat template 1:6: argument unpacking (*args, **kwargs) is not supported");
  EXPECT_EQ(render("{{ '%s' % x }}"),
            "error: chat template 1:9: printf-style '%' formatting of strings is not supported");
  EXPECT_EQ(render("{% for x in y recursive %}{% endfor %}"),
            "error: chat template 1:15: recursive for loops are not supported");
  EXPECT_EQ(render("{{ cycler(1, 2) }}"), "error: chat template 1:10: 'cycler' is not supported");
  EXPECT_EQ(render("{% frobnicate %}"), "error: chat template 1:4: unknown tag 'frobnicate'");
}

TEST(ChatTemplateErrors, MalformedTemplatesFailCleanly) {
  EXPECT_EQ(render("{% for m in messages %}\n{{ m }}"),
            "error: chat template 1:1: 'for' is never closed (expected 'endfor' or 'else')");
  EXPECT_EQ(render("{% if a %}{% endfor %}"),
            "error: chat template 1:14: unexpected 'endfor', expected 'elif' or 'else' or 'endif'");
  EXPECT_EQ(render("{{ 'abc }}"), "error: chat template 1:4: unterminated string literal");
  EXPECT_EQ(render("{{ (1 }}"), "error: chat template 1:7: unexpected '}', expected ')'");
  EXPECT_EQ(render("{{ 1"),
            "error: chat template 1:1: unexpected end of template inside this tag, expected '}}'");
  EXPECT_EQ(render("{{ 1 ]}}"), "error: chat template 1:6: unexpected ']'");
  EXPECT_EQ(render("{{ }}"), "error: chat template 1:4: expected an expression, got '}}'");
  EXPECT_EQ(render("{# never closed"), "error: chat template 1:1: missing end of comment tag");
  EXPECT_EQ(render("{% break %}"), "error: chat template 1:4: 'break' outside of a loop");
  EXPECT_EQ(render("{{ 1 +* 2 }}"), "error: chat template 1:7: unexpected '*'");
  EXPECT_EQ(render("{{ 'a' | }}"), "error: chat template 1:10: expected a name, got '}}'");
  EXPECT_EQ(render("ok\xff"), "error: chat template: invalid UTF-8 at byte 2");
  // Each prefix of a real template (every seventh) renders or fails with an error.
  std::string source = readFile(dataDir() + "/command-r7b-tool-use.jinja");
  Json context = Json::parse(R"({"messages": [{"role": "user", "content": "hi"}], "tools": []})");
  for (size_t n = 0; n <= source.size(); n += 7) {
    try {
      ChatTemplate(source.substr(0, n)).render(context);
    } catch (const TokenizerError &) {
    }
  }
}

TEST(ChatTemplateErrors, BadContext) {
  EXPECT_EQ(render("{{ x }}", Json::array()), "error: chat template context must be a JSON object");
  Json context = {{"messages", {{{"content", "bad \xc3"}}}}};
  EXPECT_EQ(render("{{ messages }}", context),
            "error: chat template context: messages[0].content: invalid UTF-8 at byte 4");
}

TEST(ChatTemplateErrors, LimitsStopRunawayTemplates) {
  EXPECT_EQ(render("{{ " + std::string(1000, '(') + "1" + std::string(1000, ')') + " }}"),
            "error: chat template 1:104: nested too deeply");
  std::string nested;
  for (int i = 0; i < 1000; ++i)
    nested += "{% if true %}";
  EXPECT_EQ(render(nested), "error: chat template 1:2581: nested too deeply");
  EXPECT_EQ(render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"),
            "error: chat template 1:19: nested too deeply (endless recursion?)");
  EXPECT_EQ(
      render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
      "error: chat template 1:29: template exceeded 10000000 loop iterations and macro calls");
  EXPECT_EQ(render("{{ 'ab' * 1000000000000 }}"), "error: chat template 1:9: string too long");
  Json deep = Json::array();
  for (int i = 0; i < 1000; ++i)
    deep = Json::array({deep});
  EXPECT_EQ(render("{{ x }}", {{"x", deep}}).substr(0, 40),
            "error: chat template context: x[0][0][0]");
}

} // namespace
