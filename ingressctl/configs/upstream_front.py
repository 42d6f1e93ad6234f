"""Upstreams at the front: `ingressctl_upstream_front` in every http upstream block of a conf.d file.

NGINX finds the upstream a `proxy_pass` names by scanning every upstream declared before it, so one file per
resource, each declaring its upstreams just before the locations that use them, costs NGINX a scan of all the
earlier upstreams per `proxy_pass`: at 10,000 Ingresses most of the time a reload takes. The upstream-front
NGINX module (nginx-module/upstream_front/) moves the upstream a block declares to the front of that list, so
its `proxy_pass` lines find it at once.

Guarantees:
- `front_upstreams(text)` adds the directive as the first line of every `upstream <name> {` block that
  starts a line (the form the templates render), once; everything else is unchanged. It is for http {}
  files only (the directive does not exist in stream {}).
- The directive changes only the order of NGINX's upstream list, never which upstream a name finds.
"""

from __future__ import annotations

import re

DIRECTIVE = "ingressctl_upstream_front"
LINE = f"    {DIRECTIVE};"
_BLOCK = re.compile(r"^(upstream [^\s{}]+ \{\n)(?!" + re.escape(LINE) + ")", re.MULTILINE)


def front_upstreams(text: str) -> str:
    """`text` with the directive in each of its upstream blocks (see the module docstring)."""
    if "upstream " not in text:
        return text
    return _BLOCK.sub(r"\1" + LINE + "\n", text)
