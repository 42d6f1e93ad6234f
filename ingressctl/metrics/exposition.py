"""The Prometheus text exposition format (0.0.4), written the way Go's promhttp writes it for NIC.

Why not `prometheus_client.generate_latest`: it always names a counter family `<name>_total`, while
nginx-prometheus-exporter's counters `nginx_ingress_nginx_connections_accepted` and `..._handled` have no
`_total` suffix (Go allows that). Written by generate_latest, their `# TYPE` line would name a family their
samples do not belong to. Here a counter family takes the name its samples carry.

Guarantees:
- One `# HELP` and one `# TYPE` line per family, named as its samples are (counter: `<name>_total` when the
  samples end in `_total`, else `<name>`; histogram: `<name>` for `_bucket`/`_sum`/`_count`).
- No `<name>_created` samples (promhttp has none; prometheus_client adds them to counters and histograms).
- Label values and help text are escaped as the format requires (backslash, double quote, newline);
  values are written as Go's `strconv.FormatFloat(v, 'g', -1, 64)` writes them (`1`, `0.25`, `1.5e+06`,
  `+Inf`, `NaN`), as promhttp does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_TYPES = {
    "counter": "counter",
    "gauge": "gauge",
    "histogram": "histogram",
    "summary": "summary",
    "unknown": "untyped",
    "info": "gauge",
    "stateset": "gauge",
    "gaugehistogram": "histogram",
}


def go_float(value: float) -> str:
    """A float as Go's shortest 'g' format writes it: exponent form when the exponent is < -4 or >= 6."""
    v = float(value)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == 0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    sign, digit_tuple, exponent = Decimal(repr(v)).as_tuple()
    assert isinstance(exponent, int)
    all_digits = "".join(str(d) for d in digit_tuple)
    digits = all_digits.rstrip("0")
    point = len(all_digits) + exponent  # position of the decimal point relative to `digits`
    neg = "-" if sign else ""
    exp = point - 1
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{neg}{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"
    if point <= 0:
        return f"{neg}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return neg + digits + "0" * (point - len(digits))
    return f"{neg}{digits[:point]}.{digits[point:]}"


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _family_name(metric: Metric) -> str:
    if metric.type == "counter":
        total = metric.name + "_total"
        if any(s.name == total for s in metric.samples):
            return total
        if not metric.samples and not metric.name.endswith("_total"):
            # A labelled counter with no series yet: prometheus_client always appends _total to its samples.
            return total
        return metric.name
    if metric.type == "info":
        return metric.name + "_info"
    return metric.name


def format_metrics(metrics: Iterable[Metric]) -> str:
    """Text exposition of metric families, in the order given."""
    out: list[str] = []
    for metric in metrics:
        family = _family_name(metric)
        out.append(f"# HELP {family} {_escape_help(metric.documentation)}\n")
        out.append(f"# TYPE {family} {_TYPES.get(metric.type, 'untyped')}\n")
        skipped = (metric.name + "_created", metric.name + "_gsum", metric.name + "_gcount")
        for sample in metric.samples:
            if sample.name in skipped:
                continue
            labels = ""
            if sample.labels:
                labels = "{" + ",".join(
                    f'{k}="{_escape_value(str(v))}"' for k, v in sorted(sample.labels.items())) + "}"
            out.append(f"{sample.name}{labels} {go_float(sample.value)}\n")
    return "".join(out)


def generate_text(registry: Collector) -> bytes:
    """Everything `registry` collects now, as UTF-8 text exposition (`CONTENT_TYPE`)."""
    return format_metrics(registry.collect()).encode("utf-8")
