#!/bin/sh
# sonde collect power. This machine has no RAPL, power PMU, hwmon sensor,
# battery or GPU: here the collector must say so (exit 3, every source named).
# Its arithmetic is checked on /sys trees laid out as the kernel documents
# them (Documentation/power/powercap, hwmon/sysfs-interface, ABI
# sysfs-class-power), under SONDE_POWER_ROOT, with a target that moves the
# counters itself: a RAPL counter that wraps, a hwmon gauge, an energy
# counter, a battery.
. "$SRC/tests/e2e/lib.sh"

within() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x >= lo && x <= hi) }'; }
# amount FILE DOMAIN SUBTYPE
amount() {
	jq -r --arg u "$2" --arg s "$3" '.resources as $r | [.resource_type_map | to_entries[] |
		select(.value.uid == $u and .value.subtype == $s) | $r[.key].amount[0]] | .[0]' "$1"
}

# ---- the real machine -------------------------------------------------------------------------
real=$(ls /sys/class/powercap/*/energy_uj /sys/class/hwmon/*/power*_input \
	/sys/class/hwmon/*/energy*_input /sys/class/power_supply/*/power_now 2>/dev/null | head -1)
run collect power -o real.json -- sleep 0.2
# a GPU NVML or ROCm SMI can read: the driver's device, or the kernel's AMD card
# (their libraries alone are no source: Debian's Slurm brings ROCm SMI's along)
gpu=
[ -e /dev/nvidiactl ] && ldconfig -p 2>/dev/null | grep -q libnvidia-ml.so.1 && gpu=nvidia
grep -qs 0x1002 /sys/class/drm/card*/device/vendor && gpu=amd
if [ -z "$real" ] && [ -z "$gpu" ] &&
	{ [ ! -d /sys/bus/event_source/devices/power ] || [ "$rc" = 3 ]; }; then
	check "no source here: exit 3" [ "$rc" = 3 ]
	check "one line, <not supported>, every source named" all \
		'has "$err" "<not supported>"' \
		'has "$err" "RAPL"' \
		'has "$err" "hwmon"' \
		'has "$err" "battery"' \
		'has "$err" "NVML"' \
		'has "$err" "ROCm"'
	check "nothing written" [ ! -e real.json ]
	# a VM can list the perf power PMU's events and count nothing: no 0 J printed
	if [ -d /sys/bus/event_source/devices/power ]; then
		check "the power PMU is listed and does not count: said so, not read as 0 J" \
			has "$err" "the perf power PMU: its energy events did not move"
	else
		skip "the power PMU is listed and does not count" "this machine lists no power PMU"
	fi
else
	check "a source here ($real): exit 0" [ "$rc" = 0 ]
	check "the profile is valid" validate real.json
	check "... each domain's energy over the run is more than 0 J (a source that counts nothing is none)" \
		jq -e '[.resource_type_map as $m | .resources | to_entries[] |
			select($m[.key].subtype == "energy") | .value.amount[]] | all(. > 0)' real.json
	skip "the power PMU is listed and does not count" "a source counts here"
fi

# ---- a tree as the kernel lays it out ------------------------------------------------------------
R=$WORK/root
pc=$R/sys/class/powercap/intel-rapl:0
hw=$R/sys/class/hwmon/hwmon3
bat=$R/sys/class/power_supply/BAT0
mkdir -p "$pc" "$R/sys/class/powercap/intel-rapl" "$hw" "$bat"
echo package-0 >"$pc/name"
range=262143328850 # µJ, as on a desktop package
echo "$range" >"$pc/max_energy_range_uj"
# 1 J before the wrap
echo $((range - 1000000)) >"$pc/energy_uj"
echo amdgpu >"$hw/name"
echo 5000000 >"$hw/power1_input" # 5 W
echo PPT >"$hw/power1_label"
echo 1000000 >"$hw/energy1_input" # µJ
echo Battery >"$bat/type"
echo 7000000 >"$bat/power_now" # 7 W
# the target: 0.3 s, then the package counter wraps and reads 2 J (3 J in all),
# the hwmon energy counter gains 4 J, then 0.3 s
cat >mover.sh <<EOF
#!/bin/sh
sleep 0.3
echo 2000000 >"$pc/energy_uj"
echo 5000000 >"$hw/energy1_input"
sleep 0.3
EOF
chmod +x mover.sh
SONDE_POWER_ROOT=$R "$SONDE" collect power -q -I 50ms -o tree.json -- ./mover.sh
rc=$?
check "the tree: exit 0" [ "$rc" = 0 ]
check "the tree: the profile is valid" validate tree.json
check "the tree: late readings are counted (samples_late, sample_late_max_ms)" \
	jq -e '.stats.power | (.samples_late | type == "number") and .sample_late_max_ms >= 0' tree.json
check "the tree: every domain found: rapl, hwmon power and energy, battery" \
	jq -e '[.stats.power.domains[].name] | sort == ["battery:BAT0", "hwmon:amdgpu/PPT",
		"hwmon:amdgpu/energy1", "rapl:package-0 (intel-rapl:0)"]' tree.json
check "RAPL across its wrap: 1 J to the wrap and 2 J after it, 3 J" \
	[ "$(amount tree.json "rapl:package-0 (intel-rapl:0)" energy)" = 3 ]
check "an energy counter: 4 J" [ "$(amount tree.json hwmon:amdgpu/energy1 energy)" = 4 ]
wall=$(jq '.resources as $r | [.resource_type_map | to_entries[] | select(.value.uid ==
	"battery:BAT0" and .value.subtype == "energy") | $r[.key].amount[0]] | .[0] / 7' tree.json)
check "a 5 W gauge: 5 W on average" \
	within "$(amount tree.json hwmon:amdgpu/PPT average)" 4.99 5.01
check "a 7 W battery: 7 W on average, and its energy is 7 W × the run ($wall s)" \
	within "$(amount tree.json battery:BAT0 average)" 6.99 7.01
check "the run lasted what the target slept: $wall s" within "$wall" 0.6 0.9
check "a series every 50 ms, in watts" \
	jq -e '[.resource_type_map[] | select(.subtype == "watts")] | length == 4' tree.json
# a counter that stands still makes no sample: its 3 J are spread over the
# ~0.3 s since it last moved (not put into one 50 ms tick as 60 W)
check "RAPL's peak: the wrap's 3 J over the ~0.3 s since the counter last moved (7.5 to 12 W)" \
	within "$(amount tree.json "rapl:package-0 (intel-rapl:0)" peak)" 7.5 12
# the same tree, a target that moves nothing: the counters stand still (their
# energy is below what they resolve: null, said in a note), the gauges are read
SONDE_POWER_ROOT=$R "$SONDE" collect power -q -I 50ms -o still.json -- sleep 0.2
check "counters that do not move in a run: energy null (not 0 J), a note; the gauges still read" all \
	'[ "$(amount still.json hwmon:amdgpu/energy1 energy)" = null ]' \
	'[ "$(amount still.json "rapl:package-0 (intel-rapl:0)" energy)" = null ]' \
	'has "$(jq -r ".stats.notes | join(\" \")" still.json)" "energy counter did not move"' \
	'within "$(amount still.json hwmon:amdgpu/PPT average)" 4.99 5.01'
check "no GPU library looked for under a test root" \
	jq -e '.stats.power.not_found == null' tree.json

# ---- energy per region: the same run's counters regions share out the series -------------------
# c-phases holds a 5 W gauge for 0.4 s in region "low", then 20 W for 0.4 s in "high"
P=$WORK/phases
mkdir -p "$P/sys/class/hwmon/hwmon1"
echo gpu >"$P/sys/class/hwmon/hwmon1/name"
echo 5000000 >"$P/sys/class/hwmon/hwmon1/power1_input"
# region RESOURCE-SUBTYPE NAME: the first execution's amount
region() {
	jq -r --arg s "$1" --arg n "$2" '.resources as $r | [.resource_type_map | to_entries[] |
		select(.value.subtype == $s and .value.region == $n) | $r[.key].amount[0]] | .[0]' ph-power.json
}
SONDE_POWER_ROOT=$P "$SONDE" collect counters+power -q -e task-clock -I 10ms -o ph.json -- \
	"$PROGS/c-phases" "$P/sys/class/hwmon/hwmon1/power1_input"
rc=$?
check "counters+power: exit 0, both profiles valid" all '[ "$rc" = 0 ]' 'validate ph-counters.json ph-power.json'
check "region low: 5 W × 0.4 s = 2 J ($(region energy low) J, within 10 %)" \
	within "$(region energy low)" 1.8 2.2
check "region high: 20 W × 0.4 s = 8 J ($(region energy high) J, within 10 %: the gauge is read every 10 ms)" \
	within "$(region energy high)" 7.2 8.8
check "and its average power: $(region average high) W" within "$(region average high)" 18 22
check "the profile says where the regions came from and how energy was shared out" \
	jq -e '.stats.power.regions.from == "counters" and .stats.power.regions.executions == 2 and
		(.stats.power.regions.method | test("interval"))' ph-power.json
out=$("$SONDE" show ph-power.json 2>&1)
check "show: a line per domain and region" has "$out" "(energy) \[region high\]"
SONDE_POWER_ROOT=$P "$SONDE" collect power -q -r 2 -o two.json -- true
check "power alone: no region rows; runs numbered 1 and 2 as in every profile" all \
	'jq -e "[.resource_type_map[] | select(.region)] | length == 0" two.json' \
	'jq -e "[.resources[] | .order[]] | unique == [1, 2]" two.json'

# a tree with nothing readable: exit 3, names the root's misses
mkdir -p "$WORK/empty/sys/class"
SONDE_POWER_ROOT=$WORK/empty "$SONDE" collect power -o e.json -- true 2>e.err
check "an empty tree: exit 3" [ $? = 3 ]
check "an empty tree: one line" [ "$(wc -l <e.err)" = 1 ]
finish
