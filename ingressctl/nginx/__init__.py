"""NGINX: its files and its process, and what the controller reads from it.

`paths` (where everything lives, the main config's contract), `conf_dir` (atomic file writes under
conf_dir), `manager` (the Manager: files plus the NGINX process: start, reload, quit), `master` (the master
as our child: output, stop, leftovers), `verify` (the config version a reload is verified by), `processes`
(worker counts from /proc), `stub_status`, `dynamic_peers` (the dynamic-peers module's API), `modules` and
`capabilities` (what the installed NGINX can do), `debug` (the nginx-debug binary).

Layering: this package never imports ingressctl.k8s, ingressctl.controller or ingressctl.configs.
"""
