"""Tests for the accelerator catalog (accelerators.toml) and its loader's validation."""

import dataclasses
import re

import pytest

from descent.catalog import (
    PLAUSIBLE_ACCELERATOR,
    PLAUSIBLE_LINK,
    Accelerator,
    CatalogError,
    accelerators,
    links,
    load_accelerators,
    load_links,
    read_file,
)

#: Rows that tests and pages name, in catalog order. More rows may be added anywhere; these must stay.
KNOWN_IDS = [
    "h100-sxm", "h200", "b200", "b300", "mi300x", "mi355x", "tpu-v7",
    "trainium3", "rtx-5090", "m3-ultra", "groq-lpu", "cerebras-wse-3",
    "a100-sxm-80gb", "a100-sxm-40gb", "l40s", "l4", "t4", "rtx-3090", "rtx-4090",
    "rtx-5060-ti-16gb", "m4-max", "gaudi-3",
]  # fmt: skip
#: Every row: the per-row tests below iterate the catalog, so a new row is checked without edits here.
ROWS = [pytest.param(a, id=a.id) for a in accelerators().values()]
FIELDS = [f.name for f in dataclasses.fields(Accelerator) if f.name not in ("id", "sources", "notes")]
GB, GIB = 10**9, 2**30


def test_known_rows_are_present_in_order():
    assert [i for i in accelerators() if i in KNOWN_IDS] == KNOWN_IDS


@pytest.mark.parametrize("a", ROWS)
def test_id_is_a_lowercase_slug(a):
    assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*", a.id), a.id


@pytest.mark.parametrize("a", ROWS)
def test_every_field_has_a_source(a):
    assert a.sources.get("default", "").strip(), f"{a.id}: sources.default missing"
    for name in FIELDS:
        assert a.source_of(name).strip(), f"{a.id}.{name} has no source"
    # A field-specific source must name a real field (a typo would silently fall back to default).
    for key in a.sources:
        assert key == "default" or key in FIELDS, f"{a.id}: sources.{key} is not a field"


@pytest.mark.parametrize("a", ROWS)
def test_marketed_capacity_matches_bytes(a):
    # "80 GB" read as GiB must be exactly 80 * 2**30 bytes; decimal labels within 1%
    # (Groq's 220 MiB = 230.7 MB is sold as "230 MB").
    number = float(re.match(r"([0-9.]+) (GB|MB)", a.memory_marketed).group(1))
    scale = {"GB": GB, "MB": 10**6}[a.memory_marketed.split()[1]]
    if a.memory_marketed_unit_is_gib:
        assert a.memory_bytes == number * GIB
    else:
        assert a.memory_bytes == pytest.approx(number * scale, rel=0.01)


def test_known_capacities():
    accs = accelerators()
    assert accs["h100-sxm"].memory_bytes == 85_899_345_920  # 80 * 2**30
    assert accs["h200"].memory_bytes == 151_397_597_184  # 141 * 2**30
    assert accs["rtx-5090"].memory_bytes == 34_359_738_368  # 32 * 2**30
    # the chips readers own: GDDR and HBM capacities are binary, "24 GB" = 24 * 2**30
    assert accs["rtx-4090"].memory_bytes == accs["rtx-3090"].memory_bytes == accs["l4"].memory_bytes == 24 * GIB
    assert accs["rtx-5060-ti-16gb"].memory_bytes == accs["t4"].memory_bytes == 16 * GIB
    assert accs["a100-sxm-40gb"].memory_bytes == 40 * GIB and accs["a100-sxm-80gb"].memory_bytes == 80 * GIB
    assert accs["m4-max"].memory_bytes == accs["gaudi-3"].memory_bytes == 128 * GIB


def test_datasheet_bandwidths_and_dense_peaks():
    """Each value from the row's datasheet, the dense (not 2:4 sparse) figure with FP32 accumulation."""
    a = accelerators()
    assert a["a100-sxm-80gb"].memory_bandwidth == 2.039e12 and a["a100-sxm-40gb"].memory_bandwidth == 1.555e12
    assert a["a100-sxm-80gb"].bf16_flops == 312e12 and a["a100-sxm-80gb"].fp8_flops is None  # 624 is sparse
    assert a["l4"].bf16_flops == 242e12 / 2 and a["l4"].fp8_flops == 485e12 / 2  # datasheet: "with sparsity"
    assert a["l40s"].bf16_flops == 362.05e12 and a["l40s"].fp8_flops == 733e12
    assert a["rtx-3090"].memory_bandwidth == 19.5e9 * 384 / 8  # 936 GB/s
    assert a["rtx-4090"].memory_bandwidth == 21e9 * 384 / 8  # 1,008 GB/s
    assert a["rtx-5060-ti-16gb"].memory_bandwidth == 28e9 * 128 / 8  # 448 GB/s
    assert a["rtx-5060-ti-16gb"].fp4_flops == 759e12 / 2  # "759 AI TOPS" is FP4 with 2:4 sparsity
    # 5060 Ti peaks scaled from the 5090's by SMs x boost clock: (36 x 2,572) / (170 x 2,407)
    ratio = (36 * 2572) / (170 * 2407)
    assert a["rtx-5060-ti-16gb"].bf16_flops == pytest.approx(209.5e12 * ratio, rel=2e-3)
    assert a["rtx-5060-ti-16gb"].fp8_flops == pytest.approx(419.2e12 * ratio, rel=2e-3)
    assert a["rtx-5060-ti-16gb"].fp4_flops == pytest.approx(1676e12 * ratio, rel=2e-3)
    assert a["gaudi-3"].bf16_flops == a["gaudi-3"].fp8_flops == 1835e12


def test_geforce_fp8_is_the_fp32_accumulate_figure():
    # RTX Blackwell whitepaper: FP8 with FP16 accumulate 838/1,676 (dense/sparse), with FP32
    # accumulate 419/838. Inference engines accumulate FP8 GEMMs in FP32: the catalog keeps 419.2
    # and says so in the row's notes and fp8_flops source.
    r = accelerators()["rtx-5090"]
    assert r.fp8_flops == 419.2e12 == 838.4e12 / 2  # half the FP16-accumulate rate
    assert "FP32 Accumulate 419" in r.source_of("fp8_flops") and "838.4" in r.notes
    # Ada: FP8 330.3 with FP32 accumulate (660.6 with FP16 accumulate)
    assert accelerators()["rtx-4090"].fp8_flops == 330.3e12


def test_16bit_peak_format_and_unstated_sparsity_are_recorded():
    accs = accelerators()
    fp16 = {a.id for a in accs.values() if a.peak_16bit_format == "FP16"}
    assert fp16 == {"t4", "groq-lpu", "cerebras-wse-3"}  # Turing has no BF16; Groq and Cerebras quote FP16
    assert {a.id for a in accs.values() if not a.peak_dense_stated} == {"cerebras-wse-3"}
    bad = VALID.replace("year = 2024", 'year = 2024\npeak_16bit_format = "FP8"')
    with pytest.raises(CatalogError, match="peak_16bit_format.*BF16, FP16"):
        load_accelerators(bad)


@pytest.mark.parametrize("a", ROWS)
def test_dense_peaks_rise_as_precision_falls(a):
    peaks = [x for x in (a.bf16_flops, a.fp8_flops, a.fp4_flops) if x is not None]
    assert peaks == sorted(peaks)
    assert 2015 <= a.year <= 2026


def test_sram_machines_say_deployments_shard():
    for a in accelerators().values():
        if a.kind == "sram":
            # Their whole memory is on-chip SRAM: the two fields hold one number.
            assert a.memory_type == "SRAM" and a.memory_bytes == a.on_chip_memory_bytes
            assert a.l2_bytes is None
            assert "shard" in a.notes
    assert {a.id for a in accelerators().values() if a.kind == "sram"} == {"groq-lpu", "cerebras-wse-3"}


def test_on_chip_fields_name_what_they_hold():
    # Issue 8, section 3: one field used to mean L2 on a GPU and all memory on an SRAM machine.
    accs = accelerators()
    # H100 whitepaper, table 1: 50 MB L2 (recorded as 50 MiB), 256 KB registers and up to 228 KB
    # shared memory per SM, 4 tensor cores per SM.
    h = accs["h100-sxm"]
    assert (h.l2_bytes, h.register_file_per_unit_bytes, h.shared_memory_per_unit_bytes) == (
        50 * 2**20, 256 * 2**10, 228 * 2**10)
    assert h.tensor_cores_per_unit == 4 and h.on_chip_memory_bytes is None
    # AMD: 4 MB of L2 in each of 8 XCDs, and a 256 MB Infinity Cache behind it (CDNA 3 whitepaper).
    assert accs["mi300x"].l2_bytes == 8 * 4 * 2**20
    assert accs["mi300x"].last_level_cache_bytes == 256 * 2**20
    # Trainium3: 8 NeuronCores x 32 MiB SBUF, software-managed, not a cache.
    assert accs["trainium3"].on_chip_memory_bytes == 8 * 32 * 2**20 and accs["trainium3"].l2_bytes is None
    for a in accs.values():
        if a.kind == "gpu":
            assert a.on_chip_memory_bytes is None, a.id


def test_the_old_field_name_is_refused_with_the_new_names():
    with pytest.raises(CatalogError, match="sram_bytes is gone|sram_bytes was split") as e:
        load_accelerators(VALID.replace("year = 2024", "year = 2024\nsram_bytes = 0"))
    assert "l2_bytes" in str(e.value) and "on_chip_memory_bytes" in str(e.value)


@pytest.mark.parametrize("acc_id", list(accelerators()))
def test_gpu_clock_matches_the_peak(acc_id):
    # Where the clock is recorded, the dense BF16 peak is a whole number of FLOP per clock per unit:
    # H100 989.4e12 / (132 x 1.83e9) = 4,096; MI300X 1,307.4e12 / (304 x 2.1e9) = 2,048 (whitepapers).
    a = accelerators()[acc_id]
    if a.clock_hz is None:
        return
    per_clock = a.bf16_flops / (a.compute_units * a.clock_hz)
    assert per_clock == pytest.approx(round(per_clock), rel=0.002), (acc_id, per_clock)
    assert round(per_clock) in (512, 2048, 4096)


def test_unpublished_values_are_marked():
    # An on-chip field left out of a GPU row that has a field source must say it is not published.
    for a in accelerators().values():
        for name in ("l2_bytes", "on_chip_memory_bytes"):
            if getattr(a, name) is None and name in a.sources:
                assert "not published" in a.source_of(name), (a.id, name)


def test_the_sram_machines_are_sram():
    accs = accelerators()
    assert accs["groq-lpu"].kind == accs["cerebras-wse-3"].kind == "sram" and accs["h200"].kind == "gpu"


VALID = """
[chip]
name = "Chip"
vendor = "V"
kind = "gpu"
memory_bytes = 1000000000
memory_marketed = "1 GB"
memory_marketed_unit_is_gib = false
memory_type = "HBM3"
memory_bandwidth = 1e12
bf16_flops = 1e15
power_watts = 700
compute_units = 1
compute_units_name = "SM"
year = 2024
[chip.sources]
default = "datasheet"
"""


def test_valid_row_loads():
    assert load_accelerators(VALID)["chip"].memory_bandwidth == 1e12


@pytest.mark.parametrize(
    "old, new, field",
    [
        ("memory_bytes = 1000000000\n", "", "memory_bytes"),  # missing
        ("memory_bandwidth = 1e12", "memory_bandwidth = -1e12", "memory_bandwidth"),  # negative
        ("memory_bandwidth = 1e12", "memory_bandwidth = 0", "memory_bandwidth"),  # not positive
        ("bf16_flops = 1e15", 'bf16_flops = "fast"', "bf16_flops"),  # wrong type
        ('kind = "gpu"', 'kind = "fpga"', "kind"),  # not an allowed kind
        ("year = 2024", "year = 2024\nclock = 2", "clock"),  # unknown field
        ("year = 2024", "year = 2024\nl2_bytes = 0", "l2_bytes"),  # 0 is not "not published"
        ('default = "datasheet"', 'memory_bytes = "x"', "sources.default"),  # no default source
        ('default = "datasheet"', 'default = ""', "sources.default"),  # an empty source (issue 15)
        ('default = "datasheet"', 'default = "datasheet"\nyear = " "', "sources.year"),  # blank
        ('default = "datasheet"', 'default = "datasheet"\nclock = "x"', "sources.clock"),  # no such field
        # A value far beyond any real chip (issue 15): the row's problem, with the limit named.
        ("memory_bandwidth = 1e12", "memory_bandwidth = 1e30", "memory_bandwidth' = 1e+30 is outside its "
         "plausible range 1,000,000,000 to 1e+17 bytes/s (descent.catalog.PLAUSIBLE_ACCELERATOR)"),
        ("year = 2024", "year = 20240", "year' = 20,240 is outside its plausible range 1,990 to 2,100"),
    ],
)
def test_malformed_rows_name_file_row_field(old, new, field):
    text = VALID.replace(old, new)
    with pytest.raises(CatalogError) as e:
        load_accelerators(text, file="accelerators.toml")
    msg = str(e.value)
    assert msg.startswith("accelerators.toml: [chip]") and field in msg, msg


# Issue 24: H200 `memory_bandwidth = 4800` (GB/s typed where bytes/s belongs) passed a check whose low
# end was 1 byte/s; the site said "one token every 341.7 days" and the build failed 222 s later at an
# unrelated page. Each numeric field has a range that every row passes and a wrong unit fails.

#: The unit a person may type each field in instead of its own, as a factor of the field's unit:
#: GB for bytes, GB/s for bytes/s, TFLOP/s for FLOP/s, kW for W, MB for a cache, KiB for a
#: per-unit memory, MHz for Hz.
UNIT_SLIPS = {
    "memory_bytes": 1e9, "memory_bandwidth": 1e9, "bf16_flops": 1e12, "fp8_flops": 1e12, "fp4_flops": 1e12,
    "power_watts": 1e3, "l2_bytes": 1e6, "last_level_cache_bytes": 1e6, "on_chip_memory_bytes": 1e6,
    "scale_up_bandwidth": 1e9, "register_file_per_unit_bytes": 1024, "shared_memory_per_unit_bytes": 1024,
    "clock_hz": 1e6,
}
SCALED = [f for f in PLAUSIBLE_ACCELERATOR if f in UNIT_SLIPS]


def _with(field: str, value: float) -> str:
    """VALID with ``field`` set to ``value`` (a whole number where the field is an integer)."""
    if dataclasses.fields(Accelerator)[[f.name for f in dataclasses.fields(Accelerator)].index(field)].type.startswith("int"):
        value = max(1, round(value))
    lines = [ln for ln in VALID.splitlines() if not ln.startswith(f"{field} =")]
    at = lines.index("[chip.sources]")
    return "\n".join([*lines[:at], f"{field} = {value!r}", *lines[at:]]) + "\n"


def _refused(field: str, value: float) -> str:
    with pytest.raises(CatalogError) as e:
        load_accelerators(_with(field, value), file="accelerators.toml")
    msg = str(e.value)
    assert msg.startswith(f"accelerators.toml: [chip]: field {field!r} = "), msg
    assert "outside its plausible range" in msg and "PLAUSIBLE_ACCELERATOR" in msg, msg
    return msg


def test_every_unit_bearing_field_has_a_range():
    assert set(UNIT_SLIPS) == set(SCALED)


@pytest.mark.parametrize("field", SCALED)
def test_every_row_is_inside_its_fields_range(field):
    low, high, _ = PLAUSIBLE_ACCELERATOR[field]
    values = {a.id: getattr(a, field) for a in accelerators().values() if getattr(a, field) is not None}
    assert values, field
    assert all(low <= v <= high for v in values.values()), (field, values)
    load_accelerators(_with(field, max(values.values())))  # the template row takes the extremes too
    load_accelerators(_with(field, min(values.values())))


@pytest.mark.parametrize("field", SCALED)
def test_a_value_in_the_wrong_unit_is_refused_naming_file_row_and_field(field):
    values = [getattr(a, field) for a in accelerators().values() if getattr(a, field) is not None]
    # Any row's value typed in the everyday unit (4,800 for 4.8 TB/s): the largest row's is the hardest.
    _refused(field, max(values) / UNIT_SLIPS[field])
    # A kilo slip from the catalog's smallest and largest rows.
    _refused(field, min(values) / 1e3)
    _refused(field, max(values) * 1e3)


def test_h200_bandwidth_in_gb_per_s_fails_the_real_catalog():
    text = read_file("accelerators.toml")
    start = text.index("\n[h200]\n")
    end = text.index("\nmemory_bandwidth = 4.8e12\n", start)
    assert text.index("\n[", start + 1) > end  # the H200's own line
    bad = text[:end] + "\nmemory_bandwidth = 4800\n" + text[end + len("\nmemory_bandwidth = 4.8e12\n"):]
    with pytest.raises(CatalogError) as e:
        load_accelerators(bad, file="descent/catalog/accelerators.toml")
    assert str(e.value).startswith(
        "descent/catalog/accelerators.toml: [h200]: field 'memory_bandwidth' = 4,800 is outside its plausible range "
        "1,000,000,000 to 1e+17 bytes/s"), str(e.value)


def test_links_have_plausible_ranges_and_refuse_a_wrong_unit():
    text = read_file("links.toml")
    rows = links()
    fastest = max(rows.values(), key=lambda x: x.bytes_per_s)
    slowest = min(rows.values(), key=lambda x: x.bytes_per_s)
    low, high, _ = PLAUSIBLE_LINK["bytes_per_s"]
    assert all(low <= x.bytes_per_s <= high for x in rows.values())
    for row, value in [(fastest, fastest.bytes_per_s / 1e9), (fastest, fastest.bytes_per_s * 1e3),
                       (slowest, slowest.bytes_per_s / 1e3), (slowest, slowest.bytes_per_s / 1e9)]:
        start = text.index(f"[{row.id}]")
        line_at = text.index("\nbytes_per_s = ", start)
        line_end = text.index("\n", line_at + 1)
        bad = text[:line_at] + f"\nbytes_per_s = {value!r}" + text[line_end:]
        with pytest.raises(CatalogError) as e:
            load_links(bad, file="descent/catalog/links.toml")
        assert str(e.value).startswith(f"descent/catalog/links.toml: [{row.id}]: field 'bytes_per_s' = "), str(e.value)
        assert "PLAUSIBLE_LINK" in str(e.value)
    # A latency typed in microseconds (3.6 for 3.6 us).
    start = text.index(f"[{fastest.id}]")
    line_at = text.index("\nbase_latency_s = ", start)
    line_end = text.index("\n", line_at + 1)
    with pytest.raises(CatalogError, match=rf"\[{fastest.id}\]: field 'base_latency_s' = 3.6 is outside"):
        load_links(text[:line_at] + "\nbase_latency_s = 3.6" + text[line_end:], file="links.toml")
