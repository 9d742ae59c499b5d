// SPDX-License-Identifier: MIT
// burst.mjs DESCRIPTORS URL CALLS BYTES: CALLS unary Reverse calls of BYTES
// each, all started at once by Connect-ES's gRPC transport over one HTTP/2
// connection to URL (http://HOST:PORT), the client made from ampd's
// descriptor set (no generated code). Issue 38: such a burst of 200 x 64
// KiB lost 21-33 calls to NGHTTP2_ENHANCE_YOUR_CALM when ampd allowed 32
// streams. Every reply is checked; prints "ok ..." and exits 0, or the
// first failures and exits 1.
import { readFileSync } from "node:fs";
import { createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

const [descriptors, baseUrl, callsArg, bytesArg] = process.argv.slice(2);
const calls = Number(callsArg), bytes = Number(bytesArg);
const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, readFileSync(descriptors)));
const amp = createClient(registry.getService("amp.v1.Amp"), createGrpcTransport({ baseUrl }));

async function call(i) {
  const data = new Uint8Array(bytes).fill(i & 0xff);
  data[0] = i >> 8;   // each call's input is its own
  try {
    const got = (await amp.reverse({ data })).data;
    const want = data.slice().reverse();
    return got.length === want.length && got.every((b, k) => b === want[k]) ? null
                                                                             : `call ${i}: wrong reply`;
  } catch (e) {
    return `call ${i}: ${e.message}`;
  }
}

const failed = (await Promise.all(Array.from({ length: calls }, (_, i) => call(i))))
  .filter((r) => r !== null);
if (failed.length) {
  console.log(`${failed.length} of ${calls} calls failed; first: ${failed.slice(0, 3).join("; ")}`);
  process.exit(1);
}
console.log(`ok ${calls} calls of ${bytes} bytes on one connection (Connect-ES)`);
