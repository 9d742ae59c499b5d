// SPDX-License-Identifier: MIT
// example.js ADDRESS [identity|gzip|deflate]: an ampd client on stock
// @grpc/grpc-js (npm install in this folder; package-lock.json pins it).
// Runs Reverse at several sizes, Transform, Fill, a 1024-bin Histogram (a
// reply large enough that ampd compresses it back when asked), Pipeline
// and a Stream, every result against a computation here, then a call past
// its deadline and a cancelled one; with gzip or
// deflate, every request message goes compressed
// ('grpc.default_compression_algorithm', as grpc-js users turn it on).
// Messages are encoded by hand (no proto-loader): the few fields these
// calls use. Exits 0 when all pass, 1 with the first difference. For
// tls:HOST:PORT, $AMP_TLS_CA names the CA file that signed the daemon's
// certificate and $AMP_TOKEN the bearer token every call sends.
//
// Regions (docs/regions.md) are not here: Node's core cannot make a
// memfd, map it, or pass a descriptor with SCM_RIGHTS (net.Socket has no
// ancillary data), so a region needs a native addon; from Node, send data
// in the messages or through Stream instead.
'use strict';
const grpc = require('@grpc/grpc-js');
const assert = require('assert');

const ALGORITHMS = { identity: 0, deflate: 1, gzip: 2 };  // grpc_compression_algorithm
const SERVICE = '/amp.v1.Amp/';
const STREAM_LEN = 3 << 20;
const CHUNK = 256 << 10;
const HIST_BINS = 1024;
const XOR = 2;  // TRANSFORM_OP_XOR
const INT32 = 3;  // ELEMENT_TYPE_INT32
const SHORT_MS = 300;  // a deadline the call outlives

function varint(n) {
  const out = [];
  while (n >= 0x80) { out.push((n % 0x80) | 0x80); n = Math.floor(n / 0x80); }
  out.push(n);
  return Buffer.from(out);
}
const field = (num, buf) => Buffer.concat([varint(num * 8 + 2), varint(buf.length), buf]);
const uint = (num, n) => Buffer.concat([varint(num * 8), varint(n)]);
function double(num, x) { const b = Buffer.alloc(8); b.writeDoubleLE(x); return Buffer.concat([varint(num * 8 + 1), b]); }

// The fields of a message: {num: [values]}, bytes as Buffers, varints as numbers.
function fields(buf) {
  const out = {};
  let i = 0;
  const rd = () => { let n = 0, m = 1, b; do { b = buf[i++]; n += (b & 0x7f) * m; m *= 128; } while (b & 0x80); return n; };
  while (i < buf.length) {
    const key = rd(), num = Math.floor(key / 8), wt = key % 8;
    let v;
    if (wt === 0) v = rd();
    else if (wt === 2) { const n = rd(); v = buf.subarray(i, i + n); i += n; }
    else if (wt === 1) { v = buf.subarray(i, i + 8); i += 8; }
    else if (wt === 5) { v = buf.subarray(i, i + 4); i += 4; }
    else throw new Error('wire type ' + wt);
    (out[num] = out[num] || []).push(v);
  }
  return out;
}
function packedVarints(buf) {
  const out = [];
  let i = 0;
  while (i < buf.length) { let n = 0, m = 1, b; do { b = buf[i++]; n += (b & 0x7f) * m; m *= 128; } while (b & 0x80); out.push(n); }
  return out;
}

function dataOf(n, seed) {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 131 + seed * 17 + (i >> 8)) & 0xff;
  return b;
}
const id = (b) => b;

function unary(client, method, req) {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(SERVICE + method, id, id, req, (err, reply) => err ? reject(err) : resolve(reply));
  });
}

async function checkUnary(client, name) {
  for (const n of [0, 1, 1000, 100003, 3 << 20]) {
    const d = dataOf(n, n + 1);
    const r = fields(await unary(client, 'Reverse', field(1, d)));
    const got = r[1] ? r[1][0] : Buffer.alloc(0);
    assert(got.equals(Buffer.from(d).reverse()), `${name}: reverse of ${n} bytes`);
  }
  const d = dataOf(200003, 3);
  const t = fields(await unary(client, 'Transform', Buffer.concat([field(1, d), field(2, Buffer.concat([uint(1, XOR), uint(2, 0x5a)]))])));
  assert(t[1][0].equals(d.map((b) => b ^ 0x5a)), `${name}: transform xor`);
  const f = fields(await unary(client, 'Fill', field(1, Buffer.concat([uint(1, INT32), uint(2, 5000), uint(4, 3), uint(5, 2)]))));
  const want = Buffer.alloc(5000 * 4);
  for (let k = 0; k < 5000; k++) want.writeInt32LE(3 + 2 * k, 4 * k);
  assert(f[1][0].equals(want), `${name}: fill int32`);
  const values = Buffer.alloc(HIST_BINS * 4);
  for (let v = 0; v < HIST_BINS; v++) values.writeInt32LE(v, 4 * v);
  const params = Buffer.concat([uint(1, INT32), uint(2, HIST_BINS), double(4, HIST_BINS)]);
  const h = fields(await unary(client, 'Histogram', Buffer.concat([field(1, values), field(2, params)])));
  const counts = packedVarints(fields(h[1][0])[1][0]);
  assert.deepStrictEqual(counts, new Array(HIST_BINS).fill(1), `${name}: histogram counts`);
  const steps = Buffer.concat([field(2, field(2, Buffer.concat([uint(1, XOR), uint(2, 1)]))),
                               field(2, field(1, Buffer.alloc(0)))]);  // xor 1, then reverse
  const p = fields(await unary(client, 'Pipeline', Buffer.concat([field(1, d), steps])));
  assert(p[1].length === 2, `${name}: a pipeline result per step`);
  assert(fields(p[1][1])[1][0].equals(d.map((b) => b ^ 1).reverse()), `${name}: pipeline`);
}

function checkStream(client, name) {
  const d = dataOf(STREAM_LEN, 7);
  const step = field(2, Buffer.concat([uint(1, XOR), uint(2, 0x33)]));  // Step.transform
  return new Promise((resolve, reject) => {
    const call = client.makeBidiStreamRequest(SERVICE + 'Stream', id, id);
    const chunks = [];
    call.on('data', (m) => { const r = fields(m); if (r[1]) chunks.push(r[1][0]); });
    call.on('error', reject);
    call.on('end', () => {
      try {
        assert(Buffer.concat(chunks).equals(d.map((b) => b ^ 0x33)), `${name}: stream of ${STREAM_LEN} bytes`);
        resolve();
      } catch (e) { reject(e); }
    });
    call.write(field(1, Buffer.concat([field(1, step), uint(3, d.length)])));  // header
    for (let i = 0; i < d.length; i += CHUNK) call.write(field(2, d.subarray(i, i + CHUNK)));
    call.end();
  });
}

// A Stream job (xor) whose input never ends: the daemon waits for it
// until the deadline passes or the client cancels. Resolves with the
// status code the call ended with.
function openStream(client, options) {
  return new Promise((resolve) => {
    const call = client.makeBidiStreamRequest(SERVICE + 'Stream', id, id, new grpc.Metadata(), options);
    call.on('data', () => {});
    call.on('error', (e) => resolve(e.code));
    call.on('end', () => resolve(grpc.status.OK));
    call.write(field(1, field(1, field(2, Buffer.concat([uint(1, XOR), uint(2, 1)])))));
    if (!options.deadline) setTimeout(() => call.cancel(), SHORT_MS);
  });
}

// A reply over grpc-js's default 4 MiB receive limit is refused before any
// device work, with a status saying what to do (amp-max-reply-bytes, a
// Stream or a region), not thrown away here.
async function checkTooLarge(client, name) {
  try {
    await unary(client, 'Reverse', field(1, Buffer.alloc(5 << 20)));
  } catch (e) {
    assert(e.code === grpc.status.RESOURCE_EXHAUSTED && e.details.includes('amp-max-reply-bytes'),
           `${name}: a 5 MiB reply: ${e.code} ${e.details}`);
    return;
  }
  assert.fail(`${name}: a 5 MiB reply came back`);
}

async function checkDeadlineAndCancel(client, name) {
  const late = await openStream(client, { deadline: Date.now() + SHORT_MS });
  assert.strictEqual(late, grpc.status.DEADLINE_EXCEEDED, `${name}: a call past its deadline`);
  const cancelled = await openStream(client, {});
  assert.strictEqual(cancelled, grpc.status.CANCELLED, `${name}: a cancelled call`);
}

// The channel credentials for address: TLS with a token for tls:HOST:PORT.
function credentialsFor(address) {
  if (!address.startsWith('tls:')) return [address, grpc.credentials.createInsecure()];
  const ca = require('fs').readFileSync(process.env.AMP_TLS_CA);
  const token = grpc.credentials.createFromMetadataGenerator((_, done) => {
    const md = new grpc.Metadata();
    md.add('authorization', 'Bearer ' + process.env.AMP_TOKEN);
    done(null, md);
  });
  return [address.slice(4), grpc.credentials.combineChannelCredentials(grpc.credentials.createSsl(ca), token)];
}

async function main() {
  const [address, name = 'identity'] = process.argv.slice(2);
  assert(address && name in ALGORITHMS, 'usage: example.js ADDRESS [identity|gzip|deflate]');
  const [target, creds] = credentialsFor(address);
  const client = new grpc.Client(target, creds, { 'grpc.default_compression_algorithm': ALGORITHMS[name] });
  try {
    await checkUnary(client, name);
    await checkStream(client, name);
    console.log(`ok   ${name}: reverse, transform, fill, histogram, pipeline, stream`);
    await checkDeadlineAndCancel(client, name);
    console.log(`ok   ${name}: deadline and cancel`);
    await checkTooLarge(client, name);
    console.log(`ok   ${name}: a reply past 4 MiB refused first, saying what to do`);
  } finally {
    client.close();
  }
}

main().catch((e) => { console.error('FAIL', e.message || e); process.exit(1); });
