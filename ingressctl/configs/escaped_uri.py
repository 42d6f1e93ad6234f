"""ingress-nginx's `$escaped_request_uri` (the original URL an `auth-signin` redirect carries) is written
`$ingressctl_escaped_request_uri`, which nginx.conf defines: the escape-URI module (nginx-module/escape_uri:
$request_uri as one URI component, as ingress-nginx's `set_escape_uri`) or, without it, a map standing in
for it ($request_uri as it is).

Guarantees:
- `defines(main_text)`: the nginx.conf text defines the variable (the built-in template always does; a
  custom main template may not).
- `plain(text)`: a conf.d file's text with the variable replaced by `$request_uri`, for an nginx.conf that
  does not define it (the same bytes when the text does not name it).
"""

from __future__ import annotations

from ingressctl.nginx.modules import ESCAPE_URI

VARIABLE = "$ingressctl_escaped_request_uri"


def defines(main_text: str) -> bool:
    return ESCAPE_URI in main_text or f"{VARIABLE} {{" in main_text


def plain(text: str) -> str:
    return text.replace(VARIABLE, "$request_uri") if VARIABLE in text else text
