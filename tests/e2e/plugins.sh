#!/bin/sh
# Custom collectors: the plugin template builds and runs; external executables.
. "$SRC/tests/e2e/lib.sh"

run utils create collector myc
check "create collector: exit 0" [ "$rc" = 0 ]
check "template files" test -f myc/myc.c -a -f myc/Makefile -a -f myc/README.md
check "template builds" make -s -C myc SONDE_INCLUDE="$SRC/include"
run collect --plugin ./myc/myc.so --help
check "plugin options in help" has "$out" "--scale N"
run collect --plugin ./myc/myc.so -q -r 3 --scale 2 -o plug.json -- "$PROGS/s-spin" 1
check "plugin collect: exit 0" [ "$rc" = 0 ]
check "plugin profile: collector name" jq_eq plug.json .collector_info.name myc
check "plugin profile: param" jq_eq plug.json .collector_info.params.scale 2
check "plugin profile: 3 wall times" jq_eq plug.json '.resources["myc#0"].amount | length' 3
check "plugin profile matches the schema" validate plug.json
run utils create collector myc
check "create collector refuses to overwrite" [ "$rc" = 1 ]
run utils create collector 9bad
check "create collector: bad name is usage" [ "$rc" = 2 ]
run collect --plugin ./nope.so -r 1 -- /bin/true
check "missing plugin: exit 1" [ "$rc" = 1 ]
check "missing plugin: message" has "$err" "cannot load plugin './nope.so'"
cp "$PROGS/s-exit" notplugin.so
run collect --plugin ./notplugin.so -r 1 -- /bin/true
check "not a plugin: exit 1" [ "$rc" = 1 ]

# an external collector in shell: runs the command, prints records on stdout
cat >ext.sh <<'EOT'
#!/bin/sh
start=$(date +%s%N)
"$@" >&2
end=$(date +%s%N)
printf '{"type": "time", "units": {"time": "ns"}, "resources": [{"uid": "%s", "type": "time", "subtype": "wall", "amount": %s}]}\n' "$1" $((end - start))
EOT
chmod +x ext.sh
run collect --external ./ext.sh -q -r 3 -w 1 -o ext.json -- "$PROGS/s-exit"
check "external: exit 0" [ "$rc" = 0 ]
check "external: 3 records" jq_eq ext.json '.resources[].amount | length' 3
check "external: order column" jq_eq ext.json '.resources[].order | join(",")' "1,2,3"
check "external: units from its output" jq_eq ext.json .header.units.time ns
check "external: profile matches the schema" validate ext.json
printf '#!/bin/sh\necho not json\n' >badext.sh && chmod +x badext.sh
run collect --external ./badext.sh -q -r 1 -o bad.json -- /bin/true
check "external printing garbage: exit 1" [ "$rc" = 1 ]
check "external printing garbage: says invalid JSON" has "$err" "invalid JSON"
finish
