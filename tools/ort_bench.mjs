#!/usr/bin/env node
// ONNX Runtime (CPU, onnxruntime-node) latency benchmark for one or more ONNX models.
// Used by tools/bench_vs_ort.sh; can be run by hand:
//
//   node tools/ort_bench.mjs [--threads 1,2] [--runs 20] [--warmup 3] [--module DIR] [--profile DIR] MODEL.onnx...
//
// --profile DIR: ONNX Runtime's own profiler on (enableProfiling), its JSON written as DIR/<model>_t<threads>_*.json
// (the warm-up and the timed runs; per-node times: tools/compare_layers.py lays them beside `npuc bench --profile-csv`).
// Profiling costs time: the figures of a profiled run are not the benchmark's.
//
// Input: MODEL_input.npy next to the model if present (float32 .npy), otherwise seeded uniform
// random data shaped from the model's input metadata (symbolic dims -> 1).
// If MODEL_output.npy exists, the max |ORT - reference| of the first output is reported too.
// Session options: intraOpNumThreads=N, interOpNumThreads=1, graphOptimizationLevel='all',
// executionMode='sequential'. Each thread count gets its own session.
// Output: one line per (model, threads), tab-separated, prefixed "ORT\t":
//   ORT <model> <threads> <median_ms> <min_ms> <max_abs_diff|n/a>
// Errors are reported as "ORT <model> <threads> error <message>" and the exit code is 1.

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { readNpy } from './npy.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = { threads: '1,2', runs: '20', warmup: '3', module: path.join(here, '..', '.bench'), profile: '' };
const models = [];
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '-h' || a === '--help') {
    console.log('usage: node tools/ort_bench.mjs [--threads 1,2] [--runs 20] [--warmup 3] ' +
                '[--module DIR_WITH_node_modules] [--profile DIR] MODEL.onnx...');
    process.exit(0);
  } else if (a.startsWith('--')) {
    const k = a.slice(2);
    if (!(k in opt) || i + 1 >= args.length) { console.error(`bad option ${a}`); process.exit(2); }
    opt[k] = args[++i];
  } else {
    models.push(a);
  }
}
if (models.length === 0) { console.error('no models given (try --help)'); process.exit(2); }

let ort;
try {
  const require = createRequire(path.join(path.resolve(opt.module), 'package.json'));
  ort = require('onnxruntime-node');
} catch (e) {
  console.error(`cannot load onnxruntime-node from ${opt.module}: ${e && e.stack || e}`);
  process.exit(3);
}


function makeInput(session, modelPath) {
  const npy = modelPath.replace(/\.onnx$/, '') + '_input.npy';
  const name = session.inputNames[0];
  if (fs.existsSync(npy)) {
    const a = readNpy(npy);
    const type = { '<f4': 'float32', '<f8': 'float64', '<i8': 'int64', '<i4': 'int32' }[a.descr];
    return { [name]: new ort.Tensor(type, a.data, a.shape) };
  }
  const meta = session.inputMetadata && session.inputMetadata[0];
  if (!meta || !meta.shape) throw new Error(`no ${path.basename(npy)} and no input metadata`);
  if (meta.type !== 'float32') throw new Error(`input type ${meta.type} unsupported without .npy`);
  const shape = meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
  const n = shape.reduce((x, y) => x * y, 1);
  const data = new Float32Array(n);
  let s = 12345; // LCG, deterministic
  for (let i = 0; i < n; i++) { s = (s * 1103515245 + 12345) >>> 0; data[i] = s / 4294967296; }
  return { [name]: new ort.Tensor('float32', data, shape) };
}

function maxDiff(modelPath, out) {
  const ref = modelPath.replace(/\.onnx$/, '') + '_output.npy';
  if (!fs.existsSync(ref)) return 'n/a';
  const r = readNpy(ref);
  const o = out.data;
  if (r.data.length !== o.length) return `size-mismatch(${o.length}vs${r.data.length})`;
  let m = 0;
  for (let i = 0; i < o.length; i++) m = Math.max(m, Math.abs(Number(o[i]) - Number(r.data[i])));
  return m.toExponential(2);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const k = s.length >> 1;
  return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2;
};

const runs = Math.max(1, parseInt(opt.runs, 10));
const warmup = Math.max(0, parseInt(opt.warmup, 10));
const threadList = opt.threads.split(',').map((t) => parseInt(t, 10)).filter((t) => t > 0);
let failed = false;
for (const model of models) {
  const base = path.basename(model, '.onnx');
  for (const threads of threadList) {
    try {
      const session = await ort.InferenceSession.create(model, {
        executionProviders: ['cpu'],
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        graphOptimizationLevel: 'all',
        executionMode: 'sequential',
        ...(opt.profile ? { enableProfiling: true, profileFilePrefix: path.join(opt.profile, `${base}_t${threads}`) } : {}),
      });
      const feeds = makeInput(session, model);
      let out;
      for (let i = 0; i < warmup; i++) out = await session.run(feeds);
      const times = [];
      for (let i = 0; i < runs; i++) {
        const t0 = process.hrtime.bigint();
        out = await session.run(feeds);
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      const diff = maxDiff(model, out[session.outputNames[0]]);
      console.log(['ORT', base, threads, median(times).toFixed(3), Math.min(...times).toFixed(3), diff].join('\t'));
      if (opt.profile) session.endProfiling();
      await session.release();
    } catch (e) {
      failed = true;
      console.log(['ORT', base, threads, 'error', String(e && e.message || e).replace(/\s+/g, ' ')].join('\t'));
    }
  }
}
process.exit(failed ? 1 : 0);
