"""The Dockerfile checked against the package, without a container engine.

A small Dockerfile parser (continuations, comments, ARG substitution, stages) and a shell splitter find the
commands each stage runs; the checks compare them with what the package needs: the entrypoint is a console
script from pyproject.toml, the user is 101, the ports are the CLI's defaults, every directory the controller
writes by default is created and owned by that user, only NGINX gets NET_BIND_SERVICE, no build tools or pip
cache remain in the final stage, all stages share one Debian release, and the build context (.dockerignore)
holds what the build copies. Each check returns its problems, so it is also run against broken Dockerfiles.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ingressctl.cli import build_parser
from ingressctl.nginx.paths import RuntimePaths

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
UID = 101
DEBIAN_RELEASES = ("buster", "bullseye", "bookworm", "trixie", "forky")
BUILD_TOOLS = ("build-essential", "gcc", "g++", "cpp", "make", "clang", "git", "libcap2-bin")


# --------------------------------------------------------------------------------------------- parsing


@dataclass
class Instruction:
    cmd: str   # upper case: FROM, RUN, ...
    args: str  # the rest, continuations joined
    line: int


@dataclass
class Stage:
    base: str              # the FROM image with build args substituted
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)
    args: dict[str, str] = field(default_factory=dict)  # ARG defaults visible in the stage

    def all(self, cmd: str) -> list[Instruction]:
        return [i for i in self.instructions if i.cmd == cmd]


def _substitute(text: str, args: dict[str, str]) -> str:
    def repl(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return args.get(name, m.group(0))
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", repl, text)


def parse_dockerfile(text: str) -> list[Stage]:
    """Stages with their instructions; global ARGs (before the first FROM) are substituted into FROM lines."""
    instructions: list[Instruction] = []
    buf: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not buf):
            continue  # comments (also inside continuations) and blank lines
        if not buf:
            start = number
        if stripped.endswith("\\"):
            buf.append(stripped[:-1].rstrip())
            continue
        buf.append(stripped)
        joined = " ".join(p for p in buf if p)
        buf = []
        cmd, _, rest = joined.partition(" ")
        instructions.append(Instruction(cmd.upper(), rest.strip(), start))
    if buf:
        raise ValueError("the Dockerfile ends inside a line continuation")

    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for ins in instructions:
        if ins.cmd == "FROM":
            words = [w for w in ins.args.split() if not w.startswith("--")]
            base = _substitute(words[0], global_args)
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base=base, name=name, args=dict(global_args)))
        elif not stages:
            if ins.cmd != "ARG":
                raise ValueError(f"line {ins.line}: {ins.cmd} before the first FROM")
            key, _, default = ins.args.partition("=")
            global_args[key.strip()] = default.strip()
        else:
            stage = stages[-1]
            if ins.cmd == "ARG":
                key, _, default = ins.args.partition("=")
                stage.args[key.strip()] = default.strip() or global_args.get(key.strip(), "")
            stage.instructions.append(Instruction(ins.cmd, _substitute(ins.args, stage.args), ins.line))
    if not stages:
        raise ValueError("no FROM")
    return stages


def run_commands(run_args: str) -> list[list[str]]:
    """The simple commands of a RUN (shell form), split at ;, &&, ||, | and newlines; no `--mount` flags."""
    while run_args.startswith("--"):
        run_args = run_args.split(None, 1)[1] if " " in run_args else ""
    lexer = shlex.shlex(run_args, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token and set(token) <= set(";&|"):
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def stage_commands(stage: Stage) -> list[list[str]]:
    return [c for ins in stage.all("RUN") for c in run_commands(ins.args)]


def env_of(stage: Stage) -> dict[str, str]:
    env: dict[str, str] = {}
    for ins in stage.all("ENV"):
        for token in shlex.split(ins.args):
            key, sep, value = token.partition("=")
            if sep:
                env[key] = value
    return env


def exec_form(ins: Instruction) -> list[str]:
    value = json.loads(ins.args)
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ValueError(f"line {ins.line}: {ins.cmd} must be an exec-form JSON list")
    return value


def apt_installed(commands: list[list[str]]) -> list[str]:
    pkgs: list[str] = []
    for c in commands:
        if c[:1] in (["apt-get"], ["apt"]) and "install" in c:
            pkgs += [w for w in c[c.index("install") + 1:] if not w.startswith("-")]
    return pkgs


def apt_removed(commands: list[list[str]]) -> list[str]:
    pkgs: list[str] = []
    for c in commands:
        if c[:1] in (["apt-get"], ["apt"]) and ("purge" in c or "remove" in c):
            verb = "purge" if "purge" in c else "remove"
            pkgs += [w for w in c[c.index(verb) + 1:] if not w.startswith("-")]
    return pkgs


def _is_within(path: str, ancestor: str) -> bool:
    return path == ancestor or path.startswith(ancestor.rstrip("/") + "/")


# --------------------------------------------------------------------------------------------- checks


def check_entrypoint(stage: Stage, scripts: dict[str, str]) -> list[str]:
    entry = stage.all("ENTRYPOINT")
    if not entry:
        return ["no ENTRYPOINT"]
    argv = exec_form(entry[-1])
    problems = []
    if argv and os.path.basename(argv[0]) == "tini":
        if "tini" not in apt_installed(stage_commands(stage)):
            problems.append("ENTRYPOINT runs tini but the stage does not install it")
        argv = argv[1:]
        if argv[:1] == ["--"]:
            argv = argv[1:]
        else:
            problems.append("tini must be given '--' before the command")
    if not argv or os.path.basename(argv[0]) not in scripts:
        problems.append(f"ENTRYPOINT command {argv[:1]} is not a console script {sorted(scripts)}")
    return problems


def check_user(stage: Stage) -> list[str]:
    users = stage.all("USER")
    if not users:
        return ["no USER: the image runs as root"]
    user = users[-1].args.split(":")[0]
    if not user.isdigit():
        return [f"USER {user!r} is not numeric: the kubelet cannot verify runAsNonRoot"]
    if int(user) == 0:
        return ["USER is root"]
    if int(user) != UID:
        return [f"USER {user} is not {UID} (the chart's runAsUser)"]
    return []


def check_expose(stage: Stage, ports: set[int]) -> list[str]:
    exposed = {int(p.split("/")[0]) for ins in stage.all("EXPOSE") for p in ins.args.split()}
    missing = sorted(ports - exposed)
    return [f"ports {missing} are not EXPOSEd"] if missing else []


def check_writable_dirs(stage: Stage, paths: list[str]) -> list[str]:
    """Each path is created (mkdir -p of it or of a path below it), then chowned to UID (itself, or an
    ancestor with -R) by root, before the USER switch."""
    problems = []
    user_line = min((i.line for i in stage.all("USER")), default=10**9)
    commands = [c for ins in stage.all("RUN") if ins.line < user_line for c in run_commands(ins.args)]

    def chowns(c: list[str], path: str) -> bool:
        if c[0] != "chown" or len(c) < 3:
            return False
        flags = [a for a in c[1:] if a.startswith("-")]
        owner, *targets = [a for a in c[1:] if not a.startswith("-")]
        recursive = any(f in ("-R", "--recursive") for f in flags)
        return owner.split(":")[0] in (str(UID), "nginx") and any(
            t == path or (recursive and _is_within(path, t)) for t in targets)

    for path in paths:
        made = [i for i, c in enumerate(commands)
                if c[0] == "mkdir" and "-p" in c and any(_is_within(a, path) for a in c[1:])]
        owned = [i for i, c in enumerate(commands) if chowns(c, path)]
        if not made:
            problems.append(f"{path} is not created (mkdir -p) before USER")
        if not owned:
            problems.append(f"{path} is not chowned to {UID} before USER")
        elif made and max(owned) < made[0]:
            problems.append(f"{path} is chowned before it is created")
    return problems


def check_capabilities(stage: Stage) -> list[str]:
    problems = []
    commands = stage_commands(stage)
    setcaps = [c for c in commands if c[0] == "setcap" and "-v" not in c]
    targets = {c[-1]: c[1:-1] for c in setcaps}
    if targets.get("/usr/sbin/nginx") != ["cap_net_bind_service=+ep"]:
        problems.append("/usr/sbin/nginx does not get cap_net_bind_service=+ep")
    for target in targets:
        if target != "/usr/sbin/nginx":
            problems.append(f"setcap on {target}: only the nginx binary may get a capability")
    if setcaps and "libcap2-bin" not in apt_removed(commands):
        problems.append("libcap2-bin (setcap) is installed but not removed")
    return problems


def check_no_build_tools(stage: Stage) -> list[str]:
    problems = []
    commands = stage_commands(stage)
    removed = set(apt_removed(commands))
    for pkg in apt_installed(commands):
        if (pkg in BUILD_TOOLS or pkg.endswith("-dev")) and pkg not in removed:
            problems.append(f"build tool {pkg} remains in the final stage")
    env = env_of(stage)
    for c in commands:
        is_pip = (os.path.basename(c[0]).startswith("pip") and "install" in c) or (
            "-m" in c and c[c.index("-m") + 1:c.index("-m") + 2] == ["pip"] and "install" in c)
        if is_pip and "--no-cache-dir" not in c and env.get("PIP_NO_CACHE_DIR") not in ("1", "true", "on"):
            problems.append(f"pip install without --no-cache-dir: {' '.join(c)}")
    for ins in stage.all("RUN"):
        cmds = run_commands(ins.args)
        if any(c[:2] == ["apt-get", "update"] for c in cmds) and not any(
                c[0] == "rm" and any(a.startswith("/var/lib/apt/lists") for a in c) for c in cmds):
            problems.append(f"line {ins.line}: apt-get update without removing /var/lib/apt/lists")
    for ins in stage.all("COPY") + stage.all("ADD"):
        if "--from=" in ins.args and "/wheels" in ins.args:
            problems.append(f"line {ins.line}: wheels copied into a layer of the final stage")
    return problems


def debian_release(image: str) -> str | None:
    found = [r for r in DEBIAN_RELEASES if r in image.split("/")[-1]]
    return found[0] if len(found) == 1 else None


def check_same_release(stages: list[Stage]) -> list[str]:
    names = {s.name: s for s in stages if s.name}
    releases = {}
    for i, s in enumerate(stages):
        base = s.base
        while base in names and names[base] is not s:
            base = names[base].base
        releases[s.name or f"stage {i}"] = debian_release(base)
    if None in releases.values():
        return [f"base image without a Debian release in its tag: {releases}"]
    if len(set(releases.values())) != 1:
        return [f"stages use different Debian releases: {releases}"]
    return []


# --------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse_dockerfile(DOCKERFILE.read_text())


@pytest.fixture(scope="module")
def final(stages: list[Stage]) -> Stage:
    return stages[-1]


def _scripts() -> dict[str, str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return dict(data["project"]["scripts"])


def _default(flag: str) -> object:
    parser = build_parser()
    for action in parser._actions:
        if flag in action.option_strings:
            return action.default
    raise KeyError(flag)


def _written_dirs() -> list[str]:
    paths = RuntimePaths(str(_default("--nginx-conf-dir")), str(_default("--nginx-run-dir")))
    return [paths.conf_dir, paths.conf_d, paths.secrets_dir, paths.run_dir]


# --------------------------------------------------------------------------------------------- the Dockerfile


def test_parser_reads_every_stage(stages: list[Stage]) -> None:
    assert len(stages) >= 2, "a builder stage and a final stage"
    assert all("${" not in s.base for s in stages), [s.base for s in stages]
    assert stages[0].name


def test_entrypoint_is_the_console_script(final: Stage) -> None:
    scripts = _scripts()
    assert scripts["ingressctl"] == "ingressctl.cli:main"
    assert check_entrypoint(final, scripts) == []


def test_runs_as_uid_101(final: Stage) -> None:
    assert check_user(final) == []


def test_exposes_the_cli_default_ports(final: Stage) -> None:
    ports = {int(str(_default(f))) for f in ("--default-http-listener-port", "--default-https-listener-port",
                                             "--ready-status-port", "--prometheus-metrics-listen-port")}
    assert ports == {80, 443, 8081, 9113}
    assert check_expose(final, ports) == []


def test_default_write_paths_exist_and_belong_to_the_user(final: Stage) -> None:
    dirs = _written_dirs()
    assert "/etc/nginx/secrets" in dirs and "/var/lib/nginx" in dirs
    assert check_writable_dirs(final, [*dirs, "/var/log/nginx"]) == []


def test_only_nginx_gets_net_bind_service(final: Stage) -> None:
    assert check_capabilities(final) == []


def test_no_build_tools_in_the_final_stage(final: Stage) -> None:
    assert check_no_build_tools(final) == []


def test_stages_share_one_debian_release(stages: list[Stage]) -> None:
    assert check_same_release(stages) == []
    assert debian_release(stages[-1].base) == "bookworm"


def test_final_stage_installs_debian_nginx_and_the_package(final: Stage) -> None:
    commands = stage_commands(final)
    assert "nginx" in apt_installed(commands)
    pip = [c for c in commands if os.path.basename(c[0]) == "pip" and "install" in c]
    assert pip and all("--no-index" in c for c in pip), "the final stage installs only the built wheels"
    assert env_of(final).get("PYTHONUNBUFFERED") == "1"
    assert final.all("STOPSIGNAL")[-1].args == "SIGTERM"
    assert not final.all("HEALTHCHECK"), "Kubernetes probes cover health"


# ----------------------------------------------------------------------------------------- the checks fail


BROKEN = """\
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE} AS builder
RUN pip wheel -w /wheels .
FROM python:3.11-slim-bullseye
RUN apt-get update && apt-get install -y gcc libcap2-bin nginx \\
 && setcap cap_net_bind_service=+ep /usr/local/bin/python3.11
RUN pip install /wheels/*.whl
COPY --from=builder /wheels /wheels
RUN mkdir -p /etc/nginx/conf.d && chown -R 0:0 /etc/nginx
RUN chown -R 101:0 /etc/nginx/secrets && mkdir -p /etc/nginx/secrets
USER nginx
EXPOSE 80
ENTRYPOINT ["python3", "-m", "ingressctl"]
"""


def test_checks_find_the_problems_of_a_broken_dockerfile() -> None:
    stages = parse_dockerfile(BROKEN)
    final = stages[-1]
    assert stages[0].base == "python:3.11-slim-bookworm"
    assert check_same_release(stages) and "different Debian releases" in check_same_release(stages)[0]
    assert check_entrypoint(final, _scripts())
    assert check_user(final) == ["USER 'nginx' is not numeric: the kubelet cannot verify runAsNonRoot"]
    assert check_expose(final, {80, 443, 8081, 9113}) == ["ports [443, 8081, 9113] are not EXPOSEd"]
    problems = check_writable_dirs(final, ["/etc/nginx/conf.d", "/var/lib/nginx", "/etc/nginx/secrets"])
    assert "/etc/nginx/secrets is chowned before it is created" in problems
    assert "/etc/nginx/conf.d is not chowned to 101 before USER" in problems
    assert "/var/lib/nginx is not created (mkdir -p) before USER" in problems
    caps = check_capabilities(final)
    assert "/usr/sbin/nginx does not get cap_net_bind_service=+ep" in caps
    assert any("/usr/local/bin/python3.11" in p for p in caps)
    assert "libcap2-bin (setcap) is installed but not removed" in caps
    tools = check_no_build_tools(final)
    assert "build tool gcc remains in the final stage" in tools
    assert any(p.startswith("pip install without --no-cache-dir") for p in tools)
    assert any("apt-get update without removing" in p for p in tools)
    assert any("wheels copied into a layer" in p for p in tools)


def test_parser_rejects_a_dangling_continuation() -> None:
    with pytest.raises(ValueError, match="continuation"):
        parse_dockerfile("FROM debian:bookworm\nRUN true \\\n")


def test_run_commands_split_shell_operators() -> None:
    assert run_commands("--mount=type=bind,source=/w,target=/w a 'b c' && d; e | f || g") == [
        ["a", "b c"], ["d"], ["e"], ["f"], ["g"]]


# --------------------------------------------------------------------------------------------- build context


def _dockerignore_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    rules = []
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = os.path.normpath(line.lstrip("!")).lstrip("/")
        regex = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex += "(?:.*/)?"
                i += 3
            elif pattern.startswith("**", i):
                regex += ".*"
                i += 2
            elif pattern[i] == "*":
                regex += "[^/]*"
                i += 1
            elif pattern[i] == "?":
                regex += "[^/]"
                i += 1
            else:
                regex += re.escape(pattern[i])
                i += 1
        rules.append((negate, re.compile(regex + r"\Z")))
    return rules


def in_build_context(relpath: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Docker's rule: the last matching pattern wins; a pattern matching a directory matches its files."""
    parts = relpath.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    included = True
    for negate, regex in rules:
        if any(regex.match(p) for p in prefixes):
            included = negate
    return included


def test_dockerignore_keeps_what_the_build_copies_and_drops_the_rest(stages: list[Stage]) -> None:
    rules = _dockerignore_patterns()
    for ins in stages[0].all("COPY"):
        *sources, _dest = [w for w in shlex.split(ins.args) if not w.startswith("--")]
        for src in sources:
            origin = ROOT / src
            sample = origin / "__init__.py" if origin.is_dir() else origin
            assert in_build_context(sample.relative_to(ROOT).as_posix(), rules), src
    assert in_build_context("ingressctl/templates/ingress.conf.j2", rules)
    for excluded in (".venv/bin/python", ".git/HEAD", "tests/unit/test_cli.py", "charts/Chart.yaml",
                     "ingressctl/__pycache__/cli.cpython-311.pyc", ".run/kubeconfig"):
        assert not in_build_context(excluded, rules), excluded


def test_build_context_builds_a_package_with_templates_and_the_entry_point(
        stages: list[Stage], tmp_path: Path) -> None:
    """What the builder stage copies (filtered by .dockerignore) is enough for setuptools to build the package
    with its templates and console script."""
    rules = _dockerignore_patterns()
    context = tmp_path / "context"
    for ins in stages[0].all("COPY"):
        *sources, _dest = [w for w in shlex.split(ins.args) if not w.startswith("--")]
        for src in sources:
            origin = ROOT / src
            files = [origin] if origin.is_file() else [p for p in origin.rglob("*") if p.is_file()]
            for f in files:
                rel = f.relative_to(ROOT).as_posix()
                if in_build_context(rel, rules):
                    (context / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(f, context / rel)
    out = subprocess.run(
        [sys.executable, "-c", "from setuptools import setup; setup()", "-q", "egg_info", "--egg-base",
         str(tmp_path), "build_py", "--build-lib", str(tmp_path / "lib")],
        cwd=context, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    templates = sorted(p.name for p in (tmp_path / "lib" / "ingressctl" / "templates").glob("*.j2"))
    assert templates == sorted(p.name for p in (ROOT / "ingressctl" / "templates").glob("*.j2"))
    assert templates, "no templates shipped"
    entry_points = (tmp_path / "ingressctl.egg-info" / "entry_points.txt").read_text()
    assert re.search(r"^ingressctl = ingressctl\.cli:main$", entry_points, re.M), entry_points


def test_the_final_stage_gets_every_module_with_its_stamp(stages: list[Stage], final: Stage) -> None:
    """The controller loads one of ingressctl's modules only when the stamp next to it names the running
    NGINX's version: the whole output directory of the module stage is copied, stamps included, and every
    module the controller looks for is one the build script builds (a directory under nginx-module/)."""
    from ingressctl.nginx.modules import (
        CERTIFICATE_CACHE,
        DYNAMIC_PEERS,
        INCLUDE_SCOPED,
        ROUTES,
        UPSTREAM_FRONT,
    )

    module_stage = next(s for s in stages if s.name == "nginx-module")
    build = " ".join(i.args for i in module_stage.all("RUN"))
    out = re.search(r"build-nginx-module\.sh --modules-dir (\S+)", build)
    assert out, build
    copies = [i.args.split() for i in final.all("COPY") if i.args.startswith("--from=nginx-module ")]
    assert [c[1:] for c in copies] == [[out.group(1).rstrip("/") + "/", "/usr/lib/nginx/modules/"]], copies
    built = {re.search(r"^ngx_module_name=(\S+)$", (d / "config").read_text(), re.M).group(1)  # type: ignore[union-attr]
             for d in (ROOT / "nginx-module").iterdir() if (d / "config").is_file()}
    modules = (DYNAMIC_PEERS, UPSTREAM_FRONT, CERTIFICATE_CACHE, INCLUDE_SCOPED, ROUTES)
    assert {m.removesuffix(".so") for m in modules} <= built, built
