#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (CPU) on .npy inputs: the reference
// for Kiln's correctness comparisons and benchmarks.
//
//   node run_ort.js MODEL.onnx --input NAME=FILE.npy ... [--output-dir DIR]
//                   [--threads N] [--benchmark N] [--warmup W]
//
// Every model input must be given. With --output-dir, each output is written
// as DIR/<output name>.npy (the name verbatim, dots included). Without
// --benchmark and without --output-dir, one line per output (name, dtype,
// shape) goes to stdout. With --benchmark N: W warm-up runs (default 3), then
// N timed runs of session.run, and stdout is exactly one JSON line:
//   {"runs":N,"min_ms":..,"median_ms":..,"p90_ms":..,"p99_ms":..,"mean_ms":..}
// (percentiles interpolate linearly, as numpy.percentile does). Errors go to
// stderr and exit with code 1.
//
// Session: CPU execution provider, intraOpNumThreads = --threads (default 0:
// ONNX Runtime's default, one per physical core), interOpNumThreads = 1,
// sequential execution, graphOptimizationLevel 'all'.
//
// Setup: `npm install --ignore-scripts` in this directory (the package's
// install script would try to download a GPU add-on; the CPU library ships in
// the package).
'use strict';

const fs = require('fs');
const path = require('path');

const USAGE = `usage: node run_ort.js MODEL.onnx --input NAME=FILE.npy ... [--output-dir DIR]
                   [--threads N] [--benchmark N] [--warmup W]`;

class UsageError extends Error {}

function fail(message) {
  process.stderr.write(`run_ort: error: ${message}\n`);
  process.exit(1);
}

//===------------------------------------------------------------------===//
// Arguments
//===------------------------------------------------------------------===//

function parseCount(flag, text, min) {
  if (!/^\d+$/.test(text) || Number(text) < min || !Number.isSafeInteger(Number(text)))
    throw new UsageError(`${flag} expects an integer >= ${min}, got '${text}'`);
  return Number(text);
}

function parseArgs(argv) {
  const args = { model: null, inputs: [], outputDir: null, threads: 0, benchmark: null, warmup: 3 };
  let warmupGiven = false;
  for (let i = 0; i < argv.length; ++i) {
    let arg = argv[i];
    if (arg === '-h' || arg === '--help') {
      process.stdout.write(USAGE + '\n');
      process.exit(0);
    }
    if (!arg.startsWith('--')) {
      if (args.model !== null) throw new UsageError(`unexpected argument '${arg}' (the model is '${args.model}')`);
      args.model = arg;
      continue;
    }
    let value;
    const eq = arg.indexOf('=');
    if (eq >= 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    const takeValue = () => {
      if (value !== undefined) return value;
      if (i + 1 >= argv.length) throw new UsageError(`${arg} needs a value`);
      return argv[++i];
    };
    switch (arg) {
      case '--input': {
        const spec = takeValue();
        const sep = spec.indexOf('=');
        if (sep <= 0 || sep === spec.length - 1)
          throw new UsageError(`--input expects NAME=FILE.npy, got '${spec}'`);
        const name = spec.slice(0, sep);
        if (args.inputs.some((x) => x.name === name)) throw new UsageError(`input '${name}' is given twice`);
        args.inputs.push({ name, file: spec.slice(sep + 1) });
        break;
      }
      case '--output-dir':
        args.outputDir = takeValue();
        break;
      case '--threads':
        args.threads = parseCount(arg, takeValue(), 0);
        break;
      case '--benchmark':
        args.benchmark = parseCount(arg, takeValue(), 1);
        break;
      case '--warmup':
        args.warmup = parseCount(arg, takeValue(), 0);
        warmupGiven = true;
        break;
      default:
        throw new UsageError(`unknown option '${arg}'`);
    }
  }
  if (args.model === null) throw new UsageError('no model given');
  if (warmupGiven && args.benchmark === null) throw new UsageError('--warmup needs --benchmark');
  return args;
}

//===------------------------------------------------------------------===//
// .npy
//===------------------------------------------------------------------===//

// descr -> [ORT tensor type, typed array constructor, bytes per element]
const NPY_READ_TYPES = {
  '<f4': ['float32', Float32Array, 4],
  '<f8': ['float64', Float64Array, 8],
  '<f2': ['float16', Uint16Array, 2], // raw IEEE half bits
  '<i8': ['int64', BigInt64Array, 8],
  '<i4': ['int32', Int32Array, 4],
  '|i1': ['int8', Int8Array, 1],
  '<i1': ['int8', Int8Array, 1],
  '|b1': ['bool', Uint8Array, 1],
  '<b1': ['bool', Uint8Array, 1],
};

// ORT tensor type -> .npy descr, for outputs.
const NPY_WRITE_DESCR = {
  float32: '<f4', float64: '<f8', float16: '<f2', int64: '<i8', int32: '<i4', int16: '<i2',
  int8: '|i1', uint64: '<u8', uint32: '<u4', uint16: '<u2', uint8: '|u1', bool: '|b1',
};

/** Parses the header dict numpy writes: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } */
function parseNpyHeader(text, file) {
  const bad = (what) => new Error(`${file}: header: ${what}`);
  const t = text.trim();
  if (!t.startsWith('{') || !t.endsWith('}')) throw bad(`not a dict: ${JSON.stringify(t.slice(0, 80))}`);
  const body = t.slice(1, -1);
  const entry = /\s*(['"])(descr|fortran_order|shape)\1\s*:\s*(?:(['"])([^'"\\]*)\3|(True|False)|\(([^()]*)\))\s*(?:,|$)/y;
  const seen = {};
  let pos = 0;
  while (pos < body.length && body.slice(pos).trim() !== '') {
    entry.lastIndex = pos;
    const m = entry.exec(body);
    if (!m) throw bad(`cannot parse ${JSON.stringify(body.slice(pos, pos + 40))} (a structured dtype or an unknown key?)`);
    const key = m[2];
    if (key in seen) throw bad(`duplicate key '${key}'`);
    if (key === 'descr' && m[4] !== undefined) seen.descr = m[4];
    else if (key === 'fortran_order' && m[5] !== undefined) seen.fortran_order = m[5] === 'True';
    else if (key === 'shape' && m[6] !== undefined) {
      const inner = m[6].trim();
      if (inner === '') seen.shape = [];
      else {
        const parts = inner.split(',').map((s) => s.trim());
        if (parts[parts.length - 1] === '') parts.pop();
        else if (parts.length === 1) throw bad(`'shape' (${inner}) is not a tuple`);
        seen.shape = parts.map((p) => {
          if (!/^\d+L?$/.test(p)) throw bad(`bad dimension '${p}' in 'shape'`);
          const d = Number(p.replace('L', ''));
          if (!Number.isSafeInteger(d)) throw bad(`dimension ${p} is too large`);
          return d;
        });
      }
    } else throw bad(`bad value for '${key}'`);
    pos = entry.lastIndex;
  }
  for (const key of ['descr', 'fortran_order', 'shape']) if (!(key in seen)) throw bad(`missing key '${key}'`);
  return seen;
}

function readNpy(file) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    throw new Error(`${file}: cannot read: ${e.message}`);
  }
  if (buf.length < 6 || buf.toString('latin1', 0, 6) !== '\x93NUMPY')
    throw new Error(`${file}: not a .npy file (bad magic)`);
  if (buf.length < 8) throw new Error(`${file}: truncated inside the format version`);
  const major = buf[6], minor = buf[7];
  if (![1, 2, 3].includes(major) || minor !== 0)
    throw new Error(`${file}: unsupported .npy format version ${major}.${minor} (supported: 1.0, 2.0, 3.0)`);
  const lenSize = major === 1 ? 2 : 4;
  if (buf.length < 8 + lenSize) throw new Error(`${file}: truncated inside the header length`);
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const dataOffset = 8 + lenSize + headerLen;
  if (dataOffset > buf.length)
    throw new Error(`${file}: truncated: the header ends at byte ${dataOffset}, but the file is ${buf.length} bytes`);
  const header = parseNpyHeader(buf.toString(major === 3 ? 'utf8' : 'latin1', 8 + lenSize, dataOffset), file);
  const type = NPY_READ_TYPES[header.descr];
  if (!type) {
    const why = header.descr.startsWith('>') ? 'big-endian; ' : header.descr.includes('u') ? 'unsigned; ' : '';
    throw new Error(`${file}: header: unsupported dtype '${header.descr}' (${why}supported: ` +
                    `'<f4' '<f8' '<f2' '<i8' '<i4' '|i1' '|b1')`);
  }
  if (header.fortran_order) throw new Error(`${file}: header: fortran_order is True; only C-order arrays are supported`);
  const [ortType, ArrayType, itemSize] = type;
  const count = header.shape.reduce((a, b) => a * b, 1);
  const expected = count * itemSize;
  if (!Number.isSafeInteger(expected)) throw new Error(`${file}: header: shape (${header.shape}) is too large`);
  const actual = buf.length - dataOffset;
  if (actual !== expected)
    throw new Error(`${file}: data is ${actual} bytes, but shape (${header.shape.join(', ')}) of ` +
                    `${header.descr} needs ${expected} bytes`);
  // Copy into a fresh, aligned buffer.
  const data = new ArrayType(count);
  new Uint8Array(data.buffer).set(buf.subarray(dataOffset));
  if (ortType === 'bool') {
    const bad = data.findIndex((v) => v > 1);
    if (bad >= 0) throw new Error(`${file}: bool element ${bad} is ${data[bad]}, not 0 or 1`);
  }
  return { type: ortType, dims: header.shape, data };
}

/** Writes a version 1.0 .npy file with numpy's header layout (64-byte aligned data). */
function writeNpy(file, type, dims, data) {
  const descr = NPY_WRITE_DESCR[type];
  if (!descr) throw new Error(`${file}: cannot write a tensor of type ${type} as .npy`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  if (dims.length > 0) dict += ' '.repeat(Math.max(0, 21 - String(dims[0]).length)); // as numpy >= 1.23
  let major = 1, lenSize = 2;
  let hlen = dict.length + 1;
  let padlen = 64 - ((8 + lenSize + hlen) % 64);
  if (hlen + padlen > 0xffff) {
    major = 2;
    lenSize = 4;
    padlen = 64 - ((8 + lenSize + hlen) % 64);
  }
  const header = Buffer.alloc(8 + lenSize + hlen + padlen, ' ');
  header.write('\x93NUMPY', 0, 'latin1');
  header[6] = major;
  header[7] = 0;
  if (lenSize === 2) header.writeUInt16LE(hlen + padlen, 8);
  else header.writeUInt32LE(hlen + padlen, 8);
  header.write(dict, 8 + lenSize, 'latin1');
  header[header.length - 1] = 0x0a;
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const count = dims.reduce((a, b) => a * b, 1);
  if (body.length !== count * data.BYTES_PER_ELEMENT)
    throw new Error(`${file}: output data is ${body.length} bytes, but shape ${shape} needs ${count * data.BYTES_PER_ELEMENT}`);
  fs.writeFileSync(file, Buffer.concat([header, body]));
}

//===------------------------------------------------------------------===//
// Running
//===------------------------------------------------------------------===//

/** Checks the given inputs against the model's: names, dtypes, ranks, static dims. */
function checkInputs(session, given) {
  const byName = new Map(given.map((x) => [x.name, x]));
  const unknown = given.filter((x) => !session.inputNames.includes(x.name)).map((x) => x.name);
  if (unknown.length)
    throw new Error(`unknown input${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `'${n}'`).join(', ')}; ` +
                    `the model's inputs are: ${session.inputNames.join(', ')}`);
  const missing = session.inputNames.filter((n) => !byName.has(n));
  if (missing.length) throw new Error(`missing --input for: ${missing.join(', ')}`);
  const symbolic = new Map(); // dim name -> [size, input name]
  for (const meta of session.inputMetadata || []) {
    if (!meta.isTensor) continue;
    const x = byName.get(meta.name);
    const t = x.tensor;
    if (meta.type && meta.type !== t.type)
      throw new Error(`input '${meta.name}' (${x.file}): the model expects ${meta.type}, the file holds ${t.type}`);
    if (Array.isArray(meta.shape)) {
      const fmt = (s) => `[${s.join(', ')}]`;
      if (meta.shape.length !== t.dims.length)
        throw new Error(`input '${meta.name}' (${x.file}): shape ${fmt(t.dims)} has rank ${t.dims.length}, ` +
                        `the model expects rank ${meta.shape.length} ${fmt(meta.shape)}`);
      meta.shape.forEach((d, i) => {
        if (typeof d === 'number' && d >= 0 && d !== t.dims[i])
          throw new Error(`input '${meta.name}' (${x.file}): dim ${i} is ${t.dims[i]}, the model expects ${d} ` +
                          `(shape ${fmt(meta.shape)})`);
        if (typeof d === 'string' && d !== '') {
          const prev = symbolic.get(d);
          if (prev && prev[0] !== t.dims[i])
            throw new Error(`input '${meta.name}' (${x.file}): dim ${i} ('${d}') is ${t.dims[i]}, but ` +
                            `'${d}' is ${prev[0]} in input '${prev[1]}'`);
          if (!prev) symbolic.set(d, [t.dims[i], meta.name]);
        }
      });
    }
  }
}

function percentile(sorted, p) {
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank), hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

/** mkdir -p, without fs.mkdirSync's {recursive: true}, which can spin forever
 * when a directory refuses new entries (e.g. under /proc). */
function makeDirs(dir) {
  const full = path.resolve(dir);
  const parts = full.split(path.sep).filter((p) => p !== '');
  let current = path.sep;
  for (const part of parts) {
    current = path.join(current, part);
    try {
      fs.mkdirSync(current);
    } catch (e) {
      if (e.code !== 'EEXIST') throw new Error(`--output-dir ${dir}: cannot create ${current}: ${e.message}`);
      if (!fs.statSync(current).isDirectory()) throw new Error(`--output-dir ${dir}: ${current} is not a directory`);
    }
  }
}

function outputFileName(name) {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0'))
    throw new Error(`output name '${name}' cannot be used as a file name`);
  return name + '.npy';
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    if (e instanceof UsageError) fail(`${e.message}\n${USAGE}`);
    throw e;
  }

  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (e) {
    fail(`cannot load onnxruntime-node (run \`npm install --ignore-scripts\` in ${__dirname}): ${e.message}`);
  }

  if (!fs.existsSync(args.model)) fail(`${args.model}: no such file`);
  const feeds = {};
  for (const x of args.inputs) {
    const t = readNpy(x.file);
    x.tensor = new ort.Tensor(t.type, t.data, t.dims);
    feeds[x.name] = x.tensor;
  }

  let session;
  const loadStart = process.hrtime.bigint();
  try {
    session = await ort.InferenceSession.create(args.model, {
      executionProviders: ['cpu'],
      intraOpNumThreads: args.threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      logSeverityLevel: 4, // errors are reported below, once
    });
  } catch (e) {
    throw new Error(`${args.model}: cannot create an ONNX Runtime session: ${e.message}`);
  }
  // Session creation: reading the model, optimizing it, preparing kernels.
  const loadMs = Number(process.hrtime.bigint() - loadStart) / 1e6;
  checkInputs(session, args.inputs);

  if (args.outputDir !== null) {
    for (const name of session.outputNames) outputFileName(name); // fail before running
    makeDirs(args.outputDir);
  }

  const run = async () => {
    try {
      return await session.run(feeds);
    } catch (e) {
      throw new Error(`${args.model}: run failed: ${e.message}`);
    }
  };

  let results;
  let stats = null;
  if (args.benchmark !== null) {
    for (let i = 0; i < args.warmup; ++i) results = await run();
    const times = [];
    for (let i = 0; i < args.benchmark; ++i) {
      const start = process.hrtime.bigint();
      results = await run();
      times.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    const sorted = [...times].sort((a, b) => a - b);
    const r = (x) => Math.round(x * 1e4) / 1e4;
    stats = {
      runs: times.length,
      min_ms: r(sorted[0]),
      median_ms: r(percentile(sorted, 50)),
      p90_ms: r(percentile(sorted, 90)),
      p99_ms: r(percentile(sorted, 99)),
      mean_ms: r(times.reduce((a, b) => a + b, 0) / times.length),
      load_ms: r(loadMs),
    };
  } else {
    results = await run();
  }

  for (const name of session.outputNames) {
    const t = results[name];
    if (args.outputDir !== null) {
      if (!(t.data instanceof ArrayBuffer || ArrayBuffer.isView(t.data)))
        throw new Error(`output '${name}' of type ${t.type} cannot be written as .npy`);
      const file = path.join(args.outputDir, outputFileName(name));
      try {
        writeNpy(file, t.type, t.dims, t.data);
      } catch (e) {
        throw new Error(e.message.startsWith(file) ? e.message : `${file}: cannot write: ${e.message}`);
      }
    } else if (stats === null) {
      process.stdout.write(`${name} ${t.type} [${t.dims.join(', ')}]\n`);
    }
  }
  if (stats !== null) process.stdout.write(JSON.stringify(stats) + '\n');
}

main().catch((e) => fail(e && e.message ? e.message : String(e)));
