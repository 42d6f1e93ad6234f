"""ingressctl: a Kubernetes NGINX Ingress Controller in Python, after the design of NIC and client-go."""

__version__ = "0.1.0"
