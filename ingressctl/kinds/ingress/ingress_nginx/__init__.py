"""ingress-nginx compatibility (`--ingress-nginx-compat`): the value syntaxes of the
`nginx.ingress.kubernetes.io/*` annotations (`values`), their translation onto ingressctl's settings
(`translate`) and what was not honoured (`report`). The table of the family is
`kinds/ingress/annotations_ingress_nginx.py`."""
