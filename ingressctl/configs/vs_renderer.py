"""The VirtualServer renderer: `VirtualServerEx` -> `conf.d/vs_<ns>_<name>.conf` (NIC's file name).

Guarantees:
- Serves the `virtualserver` kind of the Configurator: names the file, renders `virtualserver.conf.j2` (or the
  `--virtualserver-template-path` template, compiled once at start-up: a broken one is a start-up error), and
  counts VirtualServers for `virtualserver_resources_total`.
- A render error (an unsafe value, a template bug) raises `TemplateRenderError`; the Configurator keeps the
  previous file and reports the error on the resource.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import jinja2

from ingressctl.configs.quoting import NginxValueError
from ingressctl.configs.renderers import RenderContext, Rendered
from ingressctl.configs.templates import TemplateError, TemplateRenderError, new_environment
from ingressctl.configs.virtualserver import VS_KIND, VirtualServerEx, generate_vs_config
from ingressctl.keys import ResourceKey

VS_TEMPLATE = "virtualserver.conf.j2"


class VirtualServerRenderer:
    """See the module docstring."""

    kind = VS_KIND

    def __init__(self, template_path: str | None = None) -> None:
        env = new_environment()
        try:
            if template_path:
                with open(template_path, encoding="utf-8") as f:
                    self._template = env.from_string(f.read())
            else:
                self._template = env.get_template(VS_TEMPLATE)
        except OSError as e:
            raise TemplateError(f"cannot read template {template_path}: {e}") from e
        except jinja2.TemplateError as e:
            raise TemplateError(f"template {template_path or VS_TEMPLATE}: {e}") from e

    def file_name(self, key: ResourceKey) -> str:
        return f"vs_{key.namespace}_{key.name}"

    def render(self, resource: object, ctx: RenderContext) -> Rendered:
        if not isinstance(resource, VirtualServerEx):
            raise TypeError(f"not a VirtualServer: {type(resource).__name__}")
        cfg, warnings = generate_vs_config(resource, ctx.static, ctx.config)
        model = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
        try:
            text = self._template.render(model)
        except NginxValueError as e:
            raise TemplateRenderError(f"virtualserver template: unsafe value: {e}") from e
        except jinja2.TemplateError as e:
            raise TemplateRenderError(f"virtualserver template: {e}") from e
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as e:
            raise TemplateRenderError(f"virtualserver template: {type(e).__name__}: {e}") from e
        return Rendered(text, warnings)

    def counts(self, resources: Iterable[object]) -> dict[str, int]:
        return {"total": sum(1 for _ in resources)}
