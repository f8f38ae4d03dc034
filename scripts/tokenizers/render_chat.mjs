#!/usr/bin/env node
// Reference renderer for Kiln's chat-template tests.
//
//   node scripts/tokenizers/render_chat.mjs [--dir test/tokenizer/chat_templates]
//
// Reads DIR/cases.json and the templates it names (DIR/NAME.jinja), renders
// every (template, case) pair with @huggingface/jinja (the Jinja engine of
// transformers.js, which sets trim_blocks and lstrip_blocks as transformers'
// _compile_jinja_template does) and writes DIR/expected.json:
//   { "TEMPLATE": { "CASE": RESULT, ... }, ... }
// where RESULT is {"output": "..."}, {"raised": "..."} when the template
// called raise_exception (the message a renderer must reproduce exactly), or
// {"error": "..."} for any other failure (worded by @huggingface/jinja).
// A case applies to every template unless it lists `templates`. Its context
// is cases.json's `defaults`, then the template's variables, then the case's
// own context, later keys winning.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Environment, Template } from '@huggingface/jinja';

// Template.render declares raise_exception in a fresh Environment; marking
// the errors it throws is the one way to tell them from the engine's own.
class Raised extends Error {}
const declare = Environment.prototype.set;
Environment.prototype.set = function (name, value) {
  if (name === 'raise_exception') {
    value = (message) => {
      throw new Raised(message);
    };
  }
  return declare.call(this, name, value);
};

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
let dir = path.join(here, '..', '..', 'test', 'tokenizer', 'chat_templates');
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--dir') dir = args[++i];
  else {
    process.stderr.write(`render_chat.mjs: unknown argument ${args[i]}\nusage: node render_chat.mjs [--dir DIR]\n`);
    process.exit(2);
  }
}

const cases = JSON.parse(fs.readFileSync(path.join(dir, 'cases.json'), 'utf8'));
for (const c of cases.cases) {
  for (const name of c.templates ?? []) {
    if (!(name in cases.templates)) throw new Error(`case ${c.name} names unknown template ${name}`);
  }
}

const expected = {};
for (const [name, variables] of Object.entries(cases.templates)) {
  const source = fs.readFileSync(path.join(dir, `${name}.jinja`), 'utf8');
  const template = new Template(source);
  expected[name] = {};
  for (const c of cases.cases) {
    if (c.templates && !c.templates.includes(name)) continue;
    const context = { ...cases.defaults, ...variables, ...c.context };
    try {
      expected[name][c.name] = { output: template.render(context) };
    } catch (e) {
      expected[name][c.name] = e instanceof Raised ? { raised: e.message } : { error: e.message };
    }
  }
}
fs.writeFileSync(path.join(dir, 'expected.json'), JSON.stringify(expected, null, 2) + '\n');
