"""The composition root: `root.App` builds the controller's parts from `Settings`, starts them in order and
stops them in reverse; `kinds` names the resource kinds it serves, `nginx_features` what the installed NGINX
and its modules allow, `latency` the wiring of the latency metrics."""
