#!/usr/bin/env node
// Top-1 accuracy of a classifier on ONNX Runtime (CPU, onnxruntime-node): the independent peer of `npuc eval`,
// for float models and for the QDQ models of `npuc quantize` (which ORT runs on its own int8 kernels).
// Run by hand (ORT is installed into .bench/ as tools/bench_vs_ort.sh describes):
//
//   node tools/ort_eval.mjs MODEL.onnx X.npy Y.npy [--threads N] [--module DIR]
//
// X: float32 [n, ...] samples, one inference per sample (the model's batch is 1); Y: int64 labels [n].
// Prints "accuracy: P%" and "agree: K" (samples whose argmax equals --compare's, when given: a .npy of another
// runtime's predictions, int64 [n]); --save-pred FILE writes this run's predictions as int64 .npy.

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { readNpy } from './npy.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const opt = { threads: '1', module: path.join(here, '..', '.bench'), savePred: '' };
const pos = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--threads') opt.threads = args[++i];
  else if (args[i] === '--module') opt.module = args[++i];
  else if (args[i] === '--save-pred') opt.savePred = args[++i];
  else pos.push(args[i]);
}
if (pos.length !== 3) {
  console.error('usage: node tools/ort_eval.mjs MODEL.onnx X.npy Y.npy [--threads N] [--module DIR] [--save-pred FILE]');
  process.exit(2);
}


const require = createRequire(path.join(path.resolve(opt.module), 'package.json'));
const ort = require('onnxruntime-node');
const [model, xf, yf] = pos;
const x = readNpy(xf), y = readNpy(yf);
const session = await ort.InferenceSession.create(model, {
  intraOpNumThreads: Number(opt.threads), interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential',
});
const n = x.shape[0], per = x.data.length / n, sampleShape = [1, ...x.shape.slice(1)];
let correct = 0;
const pred = new BigInt64Array(n);
const t0 = performance.now();
for (let i = 0; i < n; i++) {
  const feed = { [session.inputNames[0]]: new ort.Tensor('float32', x.data.subarray(i * per, (i + 1) * per), sampleShape) };
  const out = (await session.run(feed))[session.outputNames[0]].data;
  let arg = 0;
  for (let k = 1; k < out.length; k++) if (out[k] > out[arg]) arg = k;
  pred[i] = BigInt(arg);
  if (BigInt(arg) === y.data[i]) correct++;
}
const ms = performance.now() - t0;
console.log(`samples: ${n}\ncorrect: ${correct}\naccuracy: ${(100 * correct / n).toFixed(2)}%\ntime: ${ms.toFixed(1)} ms`);
if (opt.savePred) {
  const header = `{'descr': '<i8', 'fortran_order': False, 'shape': (${n},), }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  const h = Buffer.from(header + ' '.repeat(pad % 64) + '\n', 'latin1');
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1'); pre[6] = 1; pre[7] = 0; pre.writeUInt16LE(h.length, 8);
  fs.writeFileSync(opt.savePred, Buffer.concat([pre, h, Buffer.from(pred.buffer)]));
}
