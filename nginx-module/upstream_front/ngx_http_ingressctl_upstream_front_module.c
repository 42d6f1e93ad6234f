/*
 * ingressctl's upstream front: make the upstream being declared the first
 * one NGINX's upstream lookups meet.
 *
 *   upstream backend {
 *       server 10.0.0.1:80;
 *       ingressctl_upstream_front;
 *   }
 *
 * NGINX finds the upstream a `proxy_pass http://name` (and every `upstream`
 * block) names by scanning the list of all upstreams declared so far, from
 * the first.  A configuration that declares each upstream just before the
 * locations using it (one file per resource) therefore pays a scan of every
 * earlier upstream for each of its `proxy_pass`: with 10,000 upstreams and
 * 30,000 `proxy_pass`, most of the time NGINX spends loading it.  This
 * directive moves the upstream it is in to the front of that list (swapping
 * places with the upstream there), so the lookups that follow it find it at
 * once.
 *
 * Guarantees:
 * - Only the order of the list changes, never its members: upstream names
 *   are unique (NGINX refuses a duplicate `upstream` block), so every lookup
 *   finds the same upstream as without the directive, and nothing else in
 *   NGINX depends on the order.
 * - Cheap: the upstream is looked for by its address from the end of the list
 *   (a block that did not follow a `proxy_pass` naming it is the last entry),
 *   without reading any other upstream, and one swap moves it.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>


static char *ngx_http_upstream_front(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


static ngx_command_t  ngx_http_upstream_front_commands[] = {

    { ngx_string("ingressctl_upstream_front"),
      NGX_HTTP_UPS_CONF|NGX_CONF_NOARGS,
      ngx_http_upstream_front,
      0,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_ingressctl_upstream_front_module_ctx = {
    NULL,                                  /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_ingressctl_upstream_front_module = {
    NGX_MODULE_V1,
    &ngx_http_ingressctl_upstream_front_module_ctx, /* module context */
    ngx_http_upstream_front_commands,      /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static char *
ngx_http_upstream_front(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_uint_t                       i;
    ngx_http_upstream_srv_conf_t    *uscf, **uscfp;
    ngx_http_upstream_main_conf_t   *umcf;

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);
    umcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_upstream_module);

    uscfp = umcf->upstreams.elts;

    /* the upstream is the last entry unless a proxy_pass named it first */
    for (i = umcf->upstreams.nelts; i > 0; i--) {
        if (uscfp[i - 1] == uscf) {
            uscfp[i - 1] = uscfp[0];
            uscfp[0] = uscf;
            return NGX_CONF_OK;
        }
    }

    return "is not inside an upstream block";
}
