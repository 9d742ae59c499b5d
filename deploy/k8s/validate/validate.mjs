// SPDX-License-Identifier: MIT
// validate.mjs: each Kubernetes object of a JSON array on stdin checked
// against the API's schemas (kubernetes-models: classes and validators
// generated from Kubernetes' own OpenAPI); one line per object; exit 1 if
// any does not validate or has a kind it does not know.
import { readFileSync } from 'node:fs';

const docs = JSON.parse(readFileSync(0, 'utf8'));
let failed = false;
for (const doc of docs) {
  const [group, version] = doc.apiVersion.includes('/') ? doc.apiVersion.split('/') : [null, doc.apiVersion];
  const where = `kubernetes-models/${group ? group + '/' : ''}${version}/${doc.kind}`;
  const name = `${doc.kind} ${doc.metadata.name} (${doc.apiVersion})`;
  let Kind;
  try {
    Kind = (await import(where))[doc.kind];
  } catch (e) {
    console.log(`FAIL ${name}: no schema (${where}): ${e.message}`);
    failed = true;
    continue;
  }
  try {
    new Kind(doc).validate();
    console.log(`ok   ${name}`);
  } catch (e) {
    console.log(`FAIL ${name}: ${e.message}`);
    failed = true;
  }
}
process.exit(failed ? 1 : 0);
