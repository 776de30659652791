#!/bin/sh
# show: text, JSON, CSV and Markdown; Perun profiles are read and converted.
. "$SRC/tests/e2e/lib.sh"

"$SONDE" collect time -q -r 4 -o p.json -- "$PROGS/s-spin" 1 >/dev/null
run show p.json
check "text: header row" has "$out" "95% CI of mean"
check "text: real row" has "$out" "  real "
run show p.json table --format json
check "json: parses, 9 rows" jq_eq .out '.rows | length' 9
check "json: n = 4" jq_eq .out '.rows[0].n' 4
check "json: mean between min and max" jq_eq .out '.rows[0] | .min <= .mean and .mean <= .max' true
check "json: CI contains the mean" jq_eq .out '.rows[0] | .ci95_low <= .mean and .mean <= .ci95_high' true
run show p.json --format csv
check "csv: header" [ "$(printf '%s\n' "$out" | head -1)" = "uid,type,subtype,region,workload,unit,n,mean,stddev,median,min,max,ci95_low,ci95_high,outliers" ]
check "csv: 10 lines" [ "$(printf '%s\n' "$out" | wc -l)" = 10 ]
run show p.json --format markdown
check "markdown: table" has "$out" "|---|"
run show p.json nonsense
check "unknown view: exit 2" [ "$rc" = 2 ]

# A Perun time profile in the list-of-records form
cat >perun.json <<'EOT'
{
  "origin": "1111111111111111111111111111111111111111",
  "header": {"type": "time", "cmd": "./bench", "workload": "42", "params": "", "units": {"time": "s"}},
  "collector_info": {"name": "time", "params": {"repeat": 2, "warmup": 0}},
  "postprocessors": [],
  "global": {
    "timestamp": 1.5,
    "resources": [
      {"uid": "./bench", "type": "time", "subtype": "real", "order": 1, "amount": 0.75},
      {"uid": "./bench", "type": "time", "subtype": "real", "order": 2, "amount": 0.25},
      {"uid": "./bench", "type": "time", "subtype": "user", "order": 1, "amount": 0.5},
      {"uid": "./bench", "type": "time", "subtype": "user", "order": 2, "amount": 0.5}
    ]
  }
}
EOT
run show perun.json --format json
check "perun: read" [ "$rc" = 0 ]
check "perun: real mean 0.5" jq_eq .out '.rows[0].mean' 0.5
check "perun: two resources" jq_eq .out '.rows | length' 2
# Python's JSON (Perun's) writes NaN: read as missing, said in a note
sed 's/"order": 2, "amount": 0.25/"order": 2, "amount": NaN/' perun.json >nan.json
run show nan.json --format json
check "perun NaN: read" [ "$rc" = 0 ]
check "perun NaN: left out of the mean" jq_eq .out '.rows[0].mean' 0.75
check "perun NaN: a note says so" has "$out" "NaN or infinite"
finish
