"""The VirtualServer renderer: `VirtualServerEx` -> `conf.d/vs_<ns>_<name>.conf` (NIC's file name).

Guarantees:
- Serves the `virtualserver` kind of the Configurator: names the file, renders `virtualserver.conf.j2` (or the
  `--virtualserver-template-path` template, compiled once at start-up: a broken one is a start-up error), and
  counts VirtualServers for `virtualserver_resources_total` and the VirtualServerRoutes configured inside
  them for `virtualserverroute_resources_total`.
- A render error (an unsafe value, a template bug) raises `TemplateRenderError`; the Configurator keeps the
  previous file and reports the error on the resource.
"""

from __future__ import annotations

from collections.abc import Iterable

import jinja2

from ingressctl.configs.renderers import RenderContext, Rendered
from ingressctl.configs.templates import TemplateError, new_environment, render_model
from ingressctl.keys import ResourceKey
from ingressctl.kinds.virtualserver.config import generate_vs_config
from ingressctl.kinds.virtualserver.template_model import VS_KIND, VSR_KIND, VirtualServerEx

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
        cfg, warnings = generate_vs_config(resource, ctx.static, ctx.config, ctx.replicas)
        return Rendered(render_model(self._template, cfg, "virtualserver"), warnings,
                        sum(u.zone_bytes for u in cfg.upstreams), child_warnings=cfg.child_warnings)

    def catch_all(self, resource: object) -> str:
        """A VirtualServer is never the class-wide catch-all (an Ingress without rules is)."""
        return ""

    def counts(self, resources: Iterable[object]) -> dict[str, int]:
        return {"total": sum(1 for _ in resources)}

    def child_counts(self, resources: Iterable[object]) -> dict[str, dict[str, int]]:
        """The VirtualServerRoutes configured inside the VirtualServers (NIC's
        `virtualserverroute_resources_total`)."""
        return {VSR_KIND: {"total": sum(len(r.vsrs) for r in resources if isinstance(r, VirtualServerEx))}}
