// SPDX-License-Identifier: MIT
// node_http2_burst.js ADDRESS CALLS BYTES: CALLS unary Reverse calls of BYTES
// each, all started at once on one HTTP/2 session of Node's own http2
// module, as Connect-ES's gRPC transport makes them (issue 38: a burst of
// 200 x 64 KiB lost 21-33 calls to NGHTTP2_ENHANCE_YOUR_CALM when ampd
// allowed 32 streams). Every reply is checked against the input reversed;
// prints "ok N calls" and exits 0, or the first failures and exits 1.
'use strict';
const http2 = require('node:http2');

const [address, callsArg, bytesArg] = process.argv.slice(2);
const calls = Number(callsArg), bytes = Number(bytesArg);

// protobuf: field 1 (bytes), length-delimited: the request and the reply
// (ReverseRequest.data, DataReply.data) share the shape.
function varint(n) {
  const out = [];
  while (n >= 0x80) { out.push((n & 0x7f) | 0x80); n = Math.floor(n / 128); }
  out.push(n);
  return Buffer.from(out);
}
function grpcFrame(data) {
  const msg = Buffer.concat([Buffer.from([0x0a]), varint(data.length), data]);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(msg.length, 1);
  return Buffer.concat([head, msg]);
}
function replyData(body) {
  if (body.length < 5 || body[0] !== 0) return null;
  const msg = body.subarray(5, 5 + body.readUInt32BE(1));
  let i = 1, len = 0, shift = 1;
  if (msg[0] !== 0x0a) return null;
  while (msg[i] & 0x80) { len += (msg[i++] & 0x7f) * shift; shift *= 128; }
  len += msg[i++] * shift;
  return msg.subarray(i, i + len);
}

const authority = address.startsWith('unix:') ? 'http://localhost' : 'http://' + address;
const opts = address.startsWith('unix:')
  ? { createConnection: () => require('node:net').connect(address.slice(5)) } : {};
const session = http2.connect(authority, opts);
session.on('error', (e) => { console.log('session error: ' + e.message); process.exit(1); });

function call(i) {
  return new Promise((resolve) => {
    const data = Buffer.alloc(bytes, i & 0xff);
    data.writeUInt32BE(i, 0);   // each call's input is its own
    const req = session.request({
      ':method': 'POST', ':path': '/amp.v1.Amp/Reverse', 'content-type': 'application/grpc',
      te: 'trailers',
    });
    const chunks = [];
    let status = null, message = '';
    req.on('response', (h) => { if (h['grpc-status'] !== undefined) status = h['grpc-status']; });
    req.on('trailers', (t) => { status = t['grpc-status']; message = t['grpc-message'] || ''; });
    req.on('data', (c) => chunks.push(c));
    req.on('error', (e) => resolve('call ' + i + ': ' + e.message));
    req.on('close', () => {
      if (status !== '0') {
        resolve('call ' + i + ': grpc-status ' + status + ' ' + message +
                ' (rst code ' + req.rstCode + ')');
        return;
      }
      const got = replyData(Buffer.concat(chunks));
      resolve(got && got.equals(Buffer.from(data).reverse()) ? null : 'call ' + i + ': wrong reply');
    });
    req.end(grpcFrame(data));
  });
}

Promise.all(Array.from({ length: calls }, (_, i) => call(i))).then((results) => {
  const failed = results.filter((r) => r !== null);
  session.close();
  if (failed.length) {
    console.log(failed.length + ' of ' + calls + ' calls failed; first: ' +
                failed.slice(0, 5).join('; '));
    process.exit(1);
  }
  console.log('ok ' + calls + ' calls of ' + bytes + ' bytes on one connection');
});
