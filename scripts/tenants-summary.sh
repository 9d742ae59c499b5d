#!/bin/bash
# SPDX-License-Identifier: MIT
# Each issue 34 target's spread over several bench_tenants runs:
#   scripts/tenants-summary.sh TABLE...
# reads the "# issue 34's targets" table at the end of each TABLE (a run's
# standard output) and prints, per target, the measured value's min /
# median / max and in how many runs it was met. A tail measured over a few
# seconds moves by several times between runs minutes apart, so a change
# is judged by the spread of several runs, not by one.
set -u
[ $# -gt 0 ] || { echo "usage: $0 TABLE..." >&2; exit 2; }
echo "| target | bound | min | median | max | met in |"
echo "|---|---|---:|---:|---:|---:|"
awk -F'|' '/^# issue 34.s targets/ { on = 1; next } /^# / { on = 0 }
  on && NF >= 5 && $2 !~ /^ *(target|---)/ && $5 !~ /not a target/ {
    t = $2; gsub(/^ +| +$/, "", t); b[t] = $3; v[t] = v[t] " " $4 + 0; n[t]++
    if ($5 ~ /met/ && $5 !~ /MISSED/) m[t]++; if (!(t in at)) order[++k] = t; at[t] = 1 }
  END { for (i = 1; i <= k; i++) { t = order[i]; c = split(v[t], x, " ")
          for (p = 1; p <= c; p++) for (q = p + 1; q <= c; q++) if (x[q] < x[p]) { s = x[p]; x[p] = x[q]; x[q] = s }
          med = c % 2 ? x[(c + 1) / 2] : (x[c / 2] + x[c / 2 + 1]) / 2
          printf "| %s |%s| %.2f | %.2f | %.2f | %d of %d |\n", t, b[t], x[1], med, x[c], m[t], n[t] } }' "$@"
