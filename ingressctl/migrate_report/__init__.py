"""`ingressctl migrate-report`: what ingressctl `--ingress-nginx-compat` would make of the Ingresses written
for ingress-nginx, read from a cluster (`--kubeconfig`) or from manifest files (`--from-files`), before it
serves them.

Guarantees:
- Read only: nothing is written to the cluster or the files.
- Per Ingress: whether it would be served (its class), rejected (and why, as the `Rejected` event would say)
  or not served (and why); each `nginx.ingress.kubernetes.io/*` annotation served, translated (and how),
  approximated, ignored, refused or invalid, with the reason, from the translator's own report; then a summary
  (annotation -> count per status). `--output json` gives the same as a stable JSON document.
- Exit status 0 whatever the verdicts; 2 for a usage error or input that cannot be read (a missing directory,
  a file that is not YAML or JSON, a kubeconfig that cannot be loaded, an Ingress list that fails).

Modules: sources.py (reading), analysis.py (verdicts), output.py (text and JSON), command.py (the command
line).
"""

from ingressctl.migrate_report.command import main

__all__ = ["main"]
