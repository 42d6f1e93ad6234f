"""Jinja2 rendering of the main and Ingress templates (NIC's `version1.TemplateExecutor`).

Guarantees:
- One Environment: StrictUndefined (a template that uses a field the model lacks fails at render time),
  autoescape off (NGINX config is not HTML), trim_blocks, lstrip_blocks, keep_trailing_newline, and the
  quoting filters of `quoting` plus `num`, `words`, `lb_method`, `status` and `token_var`.
- The built-in Ingress template (rendered once per Ingress, the hot path) is compiled by a second Environment
  with the same settings and `DirectAccessCodeGenerator`: `a.b` is Python's attribute access (a field the
  model lacks still fails at render time) and the filters' text is output as it is. Every other template,
  custom Ingress templates included, keeps Jinja2's semantics (`a.b` also reads a dict key; `is defined`).
- Templates are compiled once. A custom template (a `--*-template-path` file at start-up, or a ConfigMap
  override later) that fails to compile raises `TemplateError`, and the executor keeps the template it had.
- Rendering raises `TemplateRenderError` (never a bare Jinja2 or filter error), naming the template.
"""

from __future__ import annotations

import dataclasses
import functools
import keyword
import os
import re
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.runtime import new_context

from ingressctl.configs import parsing
from ingressctl.configs.config import IngressNginxConfig, MainConfig
from ingressctl.configs.quoting import FILTERS, NginxValueError, token

TEMPLATES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")
MAIN_TEMPLATE = "nginx.conf.j2"
INGRESS_TEMPLATE = "ingress.conf.j2"


class TemplateError(Exception):
    """A template could not be loaded or compiled."""


class TemplateRenderError(Exception):
    """A template failed while rendering a model (model mismatch or an unsafe value)."""


@functools.lru_cache(maxsize=4096, typed=True)  # as the quoting filters: a config repeats its numbers
def num(value: object) -> str:
    """An integer, as text; anything else is an error (no silent 0 as Jinja2's `int` filter gives)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise NginxValueError(f"expected an integer, got {value!r}")
    return str(value)


def words(value: object) -> str:
    """Space-separated bare words (e.g. `8 4k`, `TLSv1.2 TLSv1.3`)."""
    if not isinstance(value, str) or not value.split():
        raise NginxValueError(f"expected one or more words, got {value!r}")
    return " ".join(token(w) for w in value.split())


@functools.lru_cache(maxsize=256)
def _lb_method(value: str) -> str:
    return parsing.parse_lb_method(value)


def lb_method(value: object) -> str:
    if not isinstance(value, str):
        raise NginxValueError(f"expected a load balancing method, got {value!r}")
    try:
        return _lb_method(value)
    except ValueError as e:
        raise NginxValueError(str(e)) from None


_STATUS = re.compile(r"[1-5][0-9]{2}")
_VARIABLE = re.compile(r"\$[a-z_][a-z0-9_]{0,255}")


def status(value: object) -> str:
    """An HTTP status code (100-599), as text."""
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(text, str) or not _STATUS.fullmatch(text):
        raise NginxValueError(f"expected an HTTP status code, got {value!r}")
    return text


def token_var(value: object) -> str:
    """One NGINX variable such as `$http_x_custom` (bare)."""
    if not isinstance(value, str) or not _VARIABLE.fullmatch(value):
        raise NginxValueError(f"expected an NGINX variable, got {value!r}")
    return value


# The filters of every environment here; each returns str (or raises).
TEXT_FILTERS: dict[str, Any] = {**FILTERS, "num": num, "words": words, "lb_method": lb_method,
                                "status": status, "token_var": token_var}


class DirectAccessCodeGenerator(CodeGenerator):
    """Compiles `a.b` to Python's `a.b` and `a[<constant>]` to `a[<constant>]`, instead of calls of
    `Environment.getattr` / `getitem` (a Python function call per access, which try the other kind of access
    and return an Undefined when both fail), `a ~ b` to `str(a) + str(b)`, and outputs a `TEXT_FILTERS`
    filter's result without `str()`.
    Only for templates written against the model's attributes (the built-in Ingress template): a missing
    attribute raises AttributeError at render time, as StrictUndefined would raise UndefinedError."""

    @optimizeconst
    def visit_Getattr(self, node: nodes.Getattr, frame: Frame) -> None:
        if self.environment.is_async or not node.attr.isidentifier() or keyword.iskeyword(node.attr):
            super().visit_Getattr(node, frame)
            return
        self.write("(")
        self.visit(node.node, frame)
        self.write(f").{node.attr}")

    @optimizeconst
    def visit_Getitem(self, node: nodes.Getitem, frame: Frame) -> None:
        if self.environment.is_async or not isinstance(node.arg, nodes.Const):
            super().visit_Getitem(node, frame)
            return
        self.write("(")
        self.visit(node.node, frame)
        self.write(")[")
        self.visit(node.arg, frame)
        self.write("]")

    @optimizeconst
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        """`a ~ b` as `(str(a) + str(b))`: a third of the cost of Jinja2's `str_join((a, b))` call."""
        if frame.eval_ctx.volatile or frame.eval_ctx.autoescape:
            super().visit_Concat(node, frame)
            return
        self.write("(")
        for i, arg in enumerate(node.nodes):
            if i:
                self.write(" + ")
            if isinstance(arg, nodes.Const) and type(arg.value) is str:
                self.write(repr(arg.value))
                continue
            self.write("str(")
            self.visit(arg, frame)
            self.write(")")
        self.write(")")

    def _is_text(self, node: nodes.Expr, frame: Frame, finalize: Any) -> bool:
        """`node` is a call of a filter that always returns str: its output needs no `str(...)`."""
        return (isinstance(node, nodes.Filter) and node.name in TEXT_FILTERS and finalize.src is None
                and not frame.eval_ctx.volatile and not frame.eval_ctx.autoescape
                and self.environment.filters.get(node.name) is TEXT_FILTERS[node.name])

    def _output_child_pre(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        if not self._is_text(node, frame, finalize):
            super()._output_child_pre(node, frame, finalize)

    def _output_child_post(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        if not self._is_text(node, frame, finalize):
            super()._output_child_post(node, frame, finalize)


class _DirectAccessEnvironment(jinja2.Environment):
    code_generator_class = DirectAccessCodeGenerator


def new_environment(templates_dir: str = TEMPLATES_DIR, *, direct_access: bool = False) -> jinja2.Environment:
    """The Environment of the module docstring; `direct_access`: compiled with `DirectAccessCodeGenerator`."""
    env = (_DirectAccessEnvironment if direct_access else jinja2.Environment)(
        loader=jinja2.FileSystemLoader(templates_dir),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.filters.update(TEXT_FILTERS)
    return env


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _model(obj: Any) -> dict[str, Any]:
    """A frozen dataclass as the template's top-level names (shallow: nested dataclasses stay objects)."""
    names = _FIELD_NAMES.get(type(obj))
    if names is None:
        names = _FIELD_NAMES[type(obj)] = tuple(f.name for f in dataclasses.fields(obj))
    return {name: getattr(obj, name) for name in names}


@functools.lru_cache(maxsize=64)
def _globals(template: jinja2.Template) -> dict[str, Any]:
    """A template's globals (the environment's and its own), read once: Jinja2 merges its chained globals for
    every render otherwise, a sixth of the time of rendering one Ingress. Globals are never changed after a
    template is compiled here."""
    return dict(template.globals)


class TemplateExecutor:
    """Compiles and renders the main and Ingress templates."""

    def __init__(self, main_template_path: str | None = None, ingress_template_path: str | None = None,
                 *, templates_dir: str = TEMPLATES_DIR) -> None:
        self._env = new_environment(templates_dir)
        self._builtin_main = self._load(MAIN_TEMPLATE, None)
        self._builtin_ingress = self._load_builtin(new_environment(templates_dir, direct_access=True),
                                                   INGRESS_TEMPLATE)
        # The templates to fall back to when a ConfigMap override is removed or broken.
        self._base_main = self._load(MAIN_TEMPLATE, main_template_path)
        self._base_ingress = self._builtin_ingress if ingress_template_path is None else self._load(
            INGRESS_TEMPLATE, ingress_template_path)
        self._main = self._base_main
        self._ingress = self._base_ingress

    def _load(self, name: str, path: str | None) -> jinja2.Template:
        if path is None:
            return self._load_builtin(self._env, name)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise TemplateError(f"cannot read template {path}: {e}") from e
        return self._compile(text, path)

    @staticmethod
    def _load_builtin(env: jinja2.Environment, name: str) -> jinja2.Template:
        try:
            return env.get_template(name)
        except jinja2.TemplateError as e:
            raise TemplateError(f"built-in template {name}: {e}") from e

    def _compile(self, text: str, origin: str) -> jinja2.Template:
        try:
            return self._env.from_string(text)
        except jinja2.TemplateSyntaxError as e:
            raise TemplateError(f"template {origin}: line {e.lineno}: {e.message}") from e
        except jinja2.TemplateError as e:
            raise TemplateError(f"template {origin}: {e}") from e

    def update_main_template(self, text: str) -> None:
        """Use a ConfigMap's main template; on TemplateError the current one stays."""
        self._main = self._compile(text, "main-template")

    def update_ingress_template(self, text: str) -> None:
        """Use a ConfigMap's Ingress template; on TemplateError the current one stays."""
        self._ingress = self._compile(text, "ingress-template")

    def use_original_main_template(self) -> None:
        self._main = self._base_main

    def use_original_ingress_template(self) -> None:
        self._ingress = self._base_ingress

    @property
    def is_main_builtin(self) -> bool:
        return self._main is self._builtin_main

    @property
    def is_ingress_builtin(self) -> bool:
        return self._ingress is self._builtin_ingress

    def execute_main_template(self, cfg: MainConfig) -> str:
        return self._render(self._main, cfg, "main")

    def execute_ingress_template(self, cfg: IngressNginxConfig) -> str:
        return self._render(self._ingress, cfg, "ingress")

    @staticmethod
    def _render(template: jinja2.Template, cfg: Any, what: str) -> str:
        return render_model(template, cfg, what)


def render_model(template: jinja2.Template, cfg: Any, what: str) -> str:
    """Render a frozen dataclass model; any failure is a `TemplateRenderError` naming the template."""
    variables = {**_globals(template), **_model(cfg)}
    env = template.environment
    try:
        # What `Template.render` does, with the merged names shared instead of merged again per render.
        context = new_context(env, template.name, template.blocks, variables, shared=True)
        try:
            return env.concat(template.root_render_func(context))
        except Exception:
            env.handle_exception()
    except NginxValueError as e:
        raise TemplateRenderError(f"{what} template: unsafe value: {e}") from e
    except jinja2.TemplateError as e:
        raise TemplateRenderError(f"{what} template: {e}") from e
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as e:
        raise TemplateRenderError(f"{what} template: {type(e).__name__}: {e}") from e
