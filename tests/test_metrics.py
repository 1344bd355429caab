"""The metrics parser on verl's console lines among everything else a trainer prints, the file logger's JSONL, the
watcher fed raw output in arbitrary chunks while the JSONL grows, and the metrics.jsonl a run leaves behind."""

import json
import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sapo_toolkit.launcher.metrics import (
    MetricsWatcher,
    parse_console_line,
    parse_jsonl_line,
    parse_number,
    read_files,
)

from . import synthetic_log

VERL_LINE = (
    "step:3 - training/global_step:3 - actor/pg_loss:-0.0123 - critic/rewards/mean:np.float64(0.4375) - "
    "perf/throughput:1234.5678 - timing_s/step:101.25 - response_length/mean:np.int64(812) - flag:True"
)


@pytest.mark.parametrize(
    "text,value",
    [
        ("1234.5678", 1234.5678),
        ("-0.0123", -0.0123),
        ("1e-06", 1e-06),
        ("np.float64(0.4375)", 0.4375),
        ("np.int64(812)", 812.0),
        ("np.float32(-2.5)", -2.5),
        ("True", 1.0),
        ("False", 0.0),
        ("inf", math.inf),
        ("-inf", -math.inf),
        ("7", 7.0),
    ],
)
def test_numbers_as_verl_prints_them(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["(1+2j)", "tensor(0.5)", "np.str_('a')", "", "None", "abc", "np.float64(x)"])
def test_what_is_not_a_number_is_skipped(text):
    assert parse_number(text) is None


def test_nan_is_kept():
    assert math.isnan(parse_number("nan")) and math.isnan(parse_number("np.float64(nan)"))


def test_the_documented_line():
    step, values = parse_console_line(VERL_LINE)
    assert step == 3
    assert values == {
        "training/global_step": 3.0,
        "actor/pg_loss": -0.0123,
        "critic/rewards/mean": 0.4375,
        "perf/throughput": 1234.5678,
        "timing_s/step": 101.25,
        "response_length/mean": 812.0,
        "flag": 1.0,
    }


@pytest.mark.parametrize(
    "line",
    [
        "(TaskRunner pid=123) " + VERL_LINE,
        "(TaskRunner pid=123, ip=10.0.0.7) " + VERL_LINE,
        "\x1b[36m(TaskRunner pid=123)\x1b[0m " + VERL_LINE,
        "\x1b[1m\x1b[32m" + VERL_LINE + "\x1b[0m",
        "Training Progress:   3%|3         | 3/100 [05:03<2:43:12, 101.0s/it]" + VERL_LINE,
        VERL_LINE + " [repeated 2x across cluster]",
        VERL_LINE + "   ",
    ],
)
def test_prefixes_colours_bars_and_ray_dedup_around_a_metric_line(line):
    assert parse_console_line(line) == parse_console_line(VERL_LINE)


@pytest.mark.parametrize(
    "line",
    [
        "training/global_step:3 - actor/pg_loss:1",
        "val/step:3 - x:1",
        "(WorkerDict pid=9) saving step 3",
        "Training Progress:   3%|3         | 3/100",
        "",
        "step: 3 - x:1",
        "mystep:3 - x:1",
        '{"step": 3, "data": {"x": 1}}',
        "step:" + "9" * 5000 + " - x:1",
    ],
)
def test_lines_that_are_not_metric_lines(line):
    assert parse_console_line(line) is None


def test_odd_fields_are_skipped_not_fatal():
    step, values = parse_console_line(
        "step:5 - a:1 - no colon here - :7 - b:tensor(1.0) - c:np.float64(nan) - d:https://x - e/f@1-g:2"
    )
    assert step == 5 and values.keys() == {"a", "c", "e/f@1-g"} and math.isnan(values["c"])


def test_a_line_cut_short_drops_its_last_field():
    assert parse_console_line("step:4 - a:1 - perf/throughput:12", complete=False) == (4, {"a": 1.0})


def test_jsonl_records():
    assert parse_jsonl_line('{"step": 2, "data": {"a": 1, "b": null, "c": "text", "d": true, "e": [1]}}') == (
        2,
        {"a": 1.0, "b": pytest.approx(math.nan, nan_ok=True), "d": 1.0},
    )
    for bad in [
        '{"step": 2, "data": {"a": 1',
        '{"step": "2", "data": {}}',
        '{"step": true, "data": {}}',
        "[1]",
        '{"step": 2}',
        "step:2 - a:1",
        "",
    ]:
        assert parse_jsonl_line(bad) is None


def test_watcher_reassembles_chunks_and_handles_carriage_returns():
    watcher = MetricsWatcher(None)
    data = (
        "noise\n\x1b[36m(TaskRunner pid=1)\x1b[0m "
        + VERL_LINE
        + "\nbar 1%\rbar 2%\r"
        + VERL_LINE.replace("step:3", "step:4")
        + "\r\n"
    ).encode()
    steps = []
    for i in range(0, len(data), 7):
        steps += watcher.feed(data[i : i + 7])
    assert steps == [3, 4]
    assert watcher.table.series("perf/throughput") == [(3, 1234.5678), (4, 1234.5678)]


def test_watcher_close_reads_a_last_line_cut_short():
    watcher = MetricsWatcher(None)
    watcher.feed(b"step:1 - a:1\nstep:2 - a:2 - b:3")
    assert watcher.close() == [2]
    assert watcher.table.at(2) == {"a": 2.0}


def test_undecodable_bytes_do_not_stop_the_parser():
    watcher = MetricsWatcher(None)
    assert watcher.feed(b"\xff\xfe garbage \x00\nstep:1 - a:1\n") == [1]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.lists(st.integers(1, 40), max_size=10))
def test_any_bytes_in_any_chunks(noise, cuts):
    watcher = MetricsWatcher(None)
    data = noise + b"\nstep:9 - a:1.5\n" + noise
    position = 0
    for size in cuts:
        watcher.feed(data[position : position + size])
        position += size
    watcher.feed(data[position:])
    watcher.close()
    assert watcher.table.console.get(9, {}).get("a") == 1.5


def test_poll_reads_only_complete_lines_as_the_file_grows(tmp_path):
    path = tmp_path / "metrics.jsonl"
    watcher = MetricsWatcher(path)
    assert watcher.poll() == []  # not written yet
    with open(path, "wb", buffering=0) as f:
        f.write(b'{"step": 1, "data": {"a": 1}}\n{"step": 2, "da')
        assert watcher.poll() == [1]
        f.write(b'ta": {"a": 2}}\n')
        assert watcher.poll() == [2]
        assert watcher.poll() == []


def test_poll_starts_again_when_the_file_is_truncated_or_replaced(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "data": {"a": 1}}\n{"step": 2, "data": {"a": 2}}\n')
    watcher = MetricsWatcher(path)
    assert watcher.poll() == [1, 2]
    path.write_text('{"step": 1, "data": {"a": 5}}\n')  # verl's logger reopened it with "wb"
    assert watcher.poll() == [1]
    replacement = tmp_path / "new"
    replacement.write_text('{"step": 1, "data": {"a": 6}}\n{"step": 2, "data": {"a": 7}}\n{"step": 3, "data": {}}\n')
    os.replace(replacement, path)
    assert watcher.poll() == [1, 2, 3]
    assert watcher.table.series("a") == [(1, 6.0), (2, 7.0)]


def test_file_logger_values_win_over_the_console(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "data": {"a": 1.23456789}}\n')
    watcher = MetricsWatcher(path)
    watcher.feed(b"step:1 - a:1.2 - b:3\nstep:2 - a:2\n")
    watcher.poll()
    assert watcher.table.series("a") == [(1, 1.23456789), (2, 2.0)]
    assert watcher.table.at(1) == {"a": 1.23456789, "b": 3.0}


def test_metrics_file_is_completed_with_the_steps_only_the_console_showed(tmp_path):
    path = tmp_path / "metrics.jsonl"
    verl_lines = b'{"step": 1, "data": {"a": 1}}\n{"step": 2, "data": {"a": 2}}\n{"step": 3, "da'
    path.write_bytes(verl_lines)
    watcher = MetricsWatcher(path)
    watcher.feed(b"step:1 - a:1\nstep:2 - a:2\nstep:3 - a:3 - b:nan\nstep:4 - a:4\n")
    watcher.close()
    assert watcher.complete_metrics_file() == 2
    lines = path.read_bytes().splitlines(keepends=True)
    assert b"".join(lines[:2]) == verl_lines[: verl_lines.rfind(b"\n") + 1]  # verl's lines byte for byte
    assert [json.loads(line) for line in lines[2:]] == [
        {"step": 3, "data": {"a": 3.0, "b": None}, "source": "console"},
        {"step": 4, "data": {"a": 4.0}, "source": "console"},
    ]
    assert watcher.complete_metrics_file() == 0


def test_metrics_file_written_from_the_console_when_verl_never_wrote_it(tmp_path):
    watcher = MetricsWatcher(tmp_path / "metrics.jsonl")
    watcher.feed(synthetic_log.console_log().encode())
    watcher.close()
    assert watcher.complete_metrics_file() == synthetic_log.STEPS + 1
    from_file = read_files([tmp_path / "metrics.jsonl"])
    assert not from_file.console and len(from_file.jsonl) == synthetic_log.STEPS + 1


def test_an_empty_metrics_file_when_no_step_was_seen(tmp_path):
    watcher = MetricsWatcher(tmp_path / "metrics.jsonl")
    watcher.feed(b"Traceback (most recent call last):\n")
    watcher.close()
    assert watcher.complete_metrics_file() == 0 and (tmp_path / "metrics.jsonl").read_bytes() == b""


def test_both_forms_of_the_synthetic_run_read_the_same(tmp_path):
    (tmp_path / "train.log").write_text(synthetic_log.console_log())
    (tmp_path / "metrics.jsonl").write_text(synthetic_log.jsonl_log())
    console, jsonl = read_files([tmp_path / "train.log"]), read_files([tmp_path / "metrics.jsonl"])
    assert console.steps() == jsonl.steps() == list(range(synthetic_log.STEPS + 1))
    assert console.metrics() == jsonl.metrics()
    for metric in jsonl.metrics():
        (console_steps, console_values), (steps, values) = (
            zip(*console.series(metric), strict=True),
            zip(*jsonl.series(metric), strict=True),
        )
        assert console_steps == steps and console_values == pytest.approx(values, nan_ok=True), metric
    both = read_files([tmp_path / "metrics.jsonl", tmp_path / "train.log"])
    assert both.series("perf/throughput")[synthetic_log.DIP_STEP - 1] == (synthetic_log.DIP_STEP, 60.0)
