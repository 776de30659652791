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
# one that hangs after half a document: -t kills it, and the error says so
printf '#!/bin/sh\n"$@"; echo "[{\\"uid\\":"; sleep 30\n' >hang.sh && chmod +x hang.sh
run collect --external ./hang.sh -q -r 1 -t 1 -o hang.json -- /bin/true
check "external past -t: exit 1, said as a timeout (not invalid JSON), no profile" \
	all '[ "$rc" = 1 ]' 'has "$err" "ran past the time limit"' '[ ! -e hang.json ]'
# output too big for the memory sonde may take (here: what ulimit -v leaves):
# refused before loading, with the sizes; not an allocation failure half-way
cat >big.sh <<'EOF'
#!/bin/sh
"$@"
exec python3 -c 'import sys; sys.stdout.write("[" + ",".join("{\"uid\":\"f%d\",\"amount\":%d}" % (i, i) for i in range(1000000)) + "]")'
EOF
chmod +x big.sh
case "${SANITIZE:-none}" in
none)
	(ulimit -v 800000 && exec "$SONDE" collect --external ./big.sh -q -r 1 -o big.json -- /bin/true) >big.out 2>big.err
	rc=$? err=$(cat big.err)
	check "external output past the memory left (ulimit -v): exit 1, the sizes said, no profile" \
		all '[ "$rc" = 1 ]' 'has "$err" "MiB of JSON, which would take up to .* GiB to load"' '[ ! -e big.json ]'
	;;
*) skip "external output past the memory left" "a sanitized sonde cannot run under ulimit -v ($SANITIZE)" ;;
esac
# collectors registered by name: used as sonde collect NAME, from another
# shell (a new process) too, listed by --help, forgotten by rm
git init -q reg && cd reg || exit 1
"$SONDE" init >/dev/null
run collector add myc ../myc/myc.so
check "collector add: a plugin under a name, exit 0" all '[ "$rc" = 0 ]' \
	'grep -q "myc/myc.so" .sonde/config.yaml'
run collector add ext --external ../ext.sh
check "collector add --external: exit 0" [ "$rc" = 0 ]
run collector list
check "collector list: both, with their paths" \
	all 'printf "%s\n" "$out" | grep -q "^myc *plugin .*/myc/myc.so$"' \
	'printf "%s\n" "$out" | grep -q "^ext *external .*/ext.sh$"'
sh -c '"$SONDE" collect myc -q -r 2 --scale 3 -o byname.json -- "$PROGS/s-spin" 1' >/dev/null 2>&1
check "collect myc (from another shell): the plugin's profile, its option" \
	all '[ -f byname.json ]' 'jq_eq byname.json .collector_info.name myc' \
	'jq_eq byname.json .collector_info.params.scale 3' \
	"jq_eq byname.json '.resources[\"myc#0\"].amount | length' 2"
run collect ext -q -r 2 -o byext.json -- "$PROGS/s-exit"
check "collect ext: the external's records" \
	all '[ "$rc" = 0 ]' "jq_eq byext.json '.resources[].amount | length' 2"
run collect --help
check "collect --help lists the registered" has "$out" "Registered (sonde collector add): .*myc (plugin)"
run collector add time ../myc/myc.so
check "collector add with a built-in's name: exit 2" all '[ "$rc" = 2 ]' 'has "$err" "built-in"'
run collector add bad ../notplugin.so
check "collector add of something that is not a plugin: exit 2, said now" \
	all '[ "$rc" = 2 ]' 'has "$err" "notplugin.so"'
run collector rm myc
run collect myc -q -r 1 -- /bin/true
check "collector rm: the name is gone (collect: unknown collector, exit 2)" \
	all '[ "$rc" = 2 ]' 'has "$err" "unknown collector .myc."'
run collector rm myc
check "collector rm of a name not registered: exit 1" [ "$rc" = 1 ]
cd .. || exit 1

# reset(): called before every run after the first, not before the first
cat >rst.c <<'EOT'
#include <stdlib.h>
#include <sonde/collector.h>

static int resets, runs;
static long long seen[64];

static int rst_reset(struct sonde_collection *c) { (void)c; resets++; return 0; }
static int rst_stop(struct sonde_collection *c, const struct sonde_run_info *ri)
{
	(void)c;
	if (!ri->warmup && runs < 64)
		seen[runs++] = resets;
	return 0;
}
static int rst_after(struct sonde_collection *c, struct sonde_profile *p)
{
	long res = sonde_profile__resource(p, "resets", "count", "resets", NULL);
	int i, err = 0;

	(void)c;
	for (i = 0; i < runs; i++)
		err |= sonde_profile__append(p, res, "amount", json_integer(seen[i]));
	return err;
}
static const char *const units[] = { "count", "calls", NULL };
static const struct sonde_collector col = {
	.abi = SONDE_COLLECTOR_ABI, .name = "rst", .summary = "counts resets",
	.profile_type = "time", .units = units, .stop = rst_stop, .after = rst_after,
	.reset = rst_reset,
};
__attribute__((visibility("default"))) const struct sonde_collector *
sonde_collector_entry(unsigned abi)
{
	return abi == SONDE_COLLECTOR_ABI ? &col : NULL;
}
EOT
if cc -fPIC -shared -o rst.so -I"$SRC/include" $(pkg-config --cflags jansson) rst.c; then
	run collect --plugin ./rst.so -q -w 1 -r 3 -o rst.json -- /bin/true
	check "reset: before every run but the first (warm-up included): 1, 2, 3 before the measured runs" \
		all '[ "$rc" = 0 ]' "jq_eq rst.json '.resources[\"resets#0\"].amount | join(\",\")' 1,2,3"
else
	not_ok "reset: the test plugin builds"
fi
finish
