/*
 * ingressctl's routes: hosts served from a table in shared memory instead of
 * server blocks, changed through an API without a reload.
 *
 *   http {
 *       ingressctl_routes;                 # the table (its zone sizes itself)
 *
 *       ingressctl_route_host a.example.com team-a web /pem/a 301 443 {
 *           exact  /api  r1m  team-a-web-a.example.com-api-80  api  1048576;
 *           prefix /api/ r1m  team-a-web-a.example.com-api-80  api  1048576;
 *           prefix /     r1m  team-a-web-a.example.com-web-80  web  1048576;
 *       }
 *
 *       upstream ingressctl-routed {             # hands each request to the
 *           ingressctl_routes_upstream;          # upstream of its route
 *           server unix:/run/502.sock;
 *       }
 *
 *       server {
 *           listen 80 default_server;  listen 443 ssl default_server;
 *           ingressctl_routes_serve;             # look hosts up here
 *           location @r1m { client_max_body_size 1m;
 *                           proxy_pass http://ingressctl-routed; }
 *           location / { return 404; }           # hosts without a route
 *       }
 *
 *       server { listen unix:/run/routes.sock;
 *                location = /routes { ingressctl_routes_api; } }
 *   }
 *
 * A host of the table has no server block: its requests reach the server
 * with `ingressctl_routes_serve` (the default server), which looks the Host
 * up before choosing a location.  The host's route for the request's URI is
 * its `exact` path equal to the URI, else its longest `prefix` path the URI
 * starts with (NGINX's choice between `location = p` and `location p`, on
 * the same normalised URI, case-sensitive); the request then continues in
 * the route's named location, whose directives apply as those of a location
 * would, with $service, $resource_type ("ingress"), $resource_name and
 * $resource_namespace set, and proxies to the route's upstream (an upstream
 * block of the configuration, balanced, kept alive and updated by the
 * dynamic-peers module as any other).  A URI no route matches gets 404; a
 * request body larger than the route's limit gets 413 as NGINX gives it.
 * Fields with characters NGINX's parser reserves are percent-encoded.
 *
 * TLS: a host with a certificate is a TLS host.  Its handshakes go to the
 * routes server's SSL context (which must load certificates at handshakes:
 * `ssl_certificate $ingressctl_route_certificate`, directly or through a
 * map), even when that server rejects the handshakes of unknown names
 * (`ssl_reject_handshake on`); $ingressctl_route_certificate is the
 * certificate of the host the client's SNI names.  Over TLS only TLS hosts
 * are served; over plain HTTP a TLS host with a redirect code answers every
 * request with `<code> https://$host:<port>$request_uri`, as the server
 * block's `if ($scheme = http)` did.
 *
 * Guarantees:
 * - The table is built from the configuration at each start and reload, in
 *   a zone of its own created afresh, so a reload or restart serves exactly
 *   what the configuration says; the API then changes hosts in place.
 * - Every host and route is checked when loaded (a name NGINX would accept
 *   as a host, paths from `/`, named locations of the routes server,
 *   upstream blocks that exist, no host twice, no path twice): a bad one
 *   fails the load with an [emerg] naming its file and line, or the API
 *   request with 4xx and no change at all.
 * - An API request replaces the hosts it names as a whole, all of them or
 *   none: it is checked completely and its memory reserved before any host
 *   changes, and the change is made under the table's write lock, so a
 *   request sees a host's old routes or its new ones, never a mix.
 * - Readers hold the read lock only to copy what they need.
 */

#include "ngx_http_ingressctl_routes.h"


static ngx_int_t ngx_http_routes_preconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_routes_postconfiguration(ngx_conf_t *cf);
static void *ngx_http_routes_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_routes_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_routes_create_srv_conf(ngx_conf_t *cf);
static char *ngx_http_routes(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_routes_host(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_routes_route(ngx_conf_t *cf, ngx_command_t *dummy,
    void *conf);
static char *ngx_http_routes_serve(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_routes_upstream_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_http_routes_api(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_routes_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);


static ngx_command_t  ngx_http_routes_commands[] = {

    { ngx_string("ingressctl_routes"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_NOARGS|NGX_CONF_TAKE1,
      ngx_http_routes,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("ingressctl_route_host"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_BLOCK|NGX_CONF_TAKE6,
      ngx_http_routes_host,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("ingressctl_routes_serve"),
      NGX_HTTP_SRV_CONF|NGX_CONF_NOARGS,
      ngx_http_routes_serve,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("ingressctl_routes_upstream"),
      NGX_HTTP_UPS_CONF|NGX_CONF_NOARGS,
      ngx_http_routes_upstream_directive,
      0,
      0,
      NULL },

    { ngx_string("ingressctl_routes_api"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_routes_api,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_ingressctl_routes_module_ctx = {
    ngx_http_routes_preconfiguration,      /* preconfiguration */
    ngx_http_routes_postconfiguration,     /* postconfiguration */

    ngx_http_routes_create_main_conf,      /* create main configuration */
    ngx_http_routes_init_main_conf,        /* init main configuration */

    ngx_http_routes_create_srv_conf,       /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_ingressctl_routes_module = {
    NGX_MODULE_V1,
    &ngx_http_ingressctl_routes_module_ctx, /* module context */
    ngx_http_routes_commands,              /* module directives */
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


typedef struct ngx_http_routes_seen_s  ngx_http_routes_seen_t;

struct ngx_http_routes_seen_s {
    ngx_http_routes_seen_t         *next;
    ngx_http_routes_spec_t         *spec;
};


static ngx_str_t  ngx_http_routes_zone_name = ngx_string("ingressctl_routes");


/* the variables a route sets (those of the server blocks it replaces) */
static ngx_str_t  ngx_http_routes_set_names[] = {
    ngx_string("service"),
    ngx_string("resource_type"),
    ngx_string("resource_name"),
    ngx_string("resource_namespace"),
    ngx_string("ingressctl_route_upstream"),
};


static ngx_int_t
ngx_http_routes_preconfiguration(ngx_conf_t *cf)
{
    ngx_uint_t                    i;
    ngx_int_t                     index;
    ngx_http_variable_t          *v;
    ngx_http_routes_main_conf_t  *rmcf;

    static ngx_str_t  certificate = ngx_string("ingressctl_route_certificate");

    rmcf = ngx_http_conf_get_module_main_conf(cf,
                                          ngx_http_ingressctl_routes_module);

    for (i = 0; i < sizeof(ngx_http_routes_set_names) / sizeof(ngx_str_t);
         i++)
    {
        v = ngx_http_add_variable(cf, &ngx_http_routes_set_names[i],
                                  NGX_HTTP_VAR_CHANGEABLE);
        if (v == NULL) {
            return NGX_ERROR;
        }

        if (v->get_handler == NULL) {
            v->get_handler = ngx_http_routes_unset_variable;
        }

        index = ngx_http_get_variable_index(cf, &ngx_http_routes_set_names[i]);
        if (index == NGX_ERROR) {
            return NGX_ERROR;
        }

        rmcf->index[i] = index;
    }

    v = ngx_http_add_variable(cf, &certificate, NGX_HTTP_VAR_NOCACHEABLE);
    if (v == NULL) {
        return NGX_ERROR;
    }

    v->get_handler = ngx_http_routes_certificate_variable;

    return NGX_OK;
}


static void *
ngx_http_routes_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_routes_main_conf_t  *rmcf;

    rmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_routes_main_conf_t));
    if (rmcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&rmcf->specs, cf->pool, 64,
                       sizeof(ngx_http_routes_spec_t))
        != NGX_OK)
    {
        return NULL;
    }

    return rmcf;
}


static void *
ngx_http_routes_create_srv_conf(ngx_conf_t *cf)
{
    return ngx_pcalloc(cf->pool, sizeof(ngx_http_routes_srv_conf_t));
}


static char *
ngx_http_routes(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_routes_main_conf_t  *rmcf = conf;

    ssize_t     size;
    ngx_str_t  *value, s;

    if (rmcf->enabled) {
        return "is duplicate";
    }

    rmcf->enabled = 1;
    value = cf->args->elts;

    if (cf->args->nelts == 2) {
        if (ngx_strncmp(value[1].data, "zone_size=", 10) != 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", &value[1]);
            return NGX_CONF_ERROR;
        }

        s.data = value[1].data + 10;
        s.len = value[1].len - 10;
        size = ngx_parse_size(&s);

        if (size == NGX_ERROR) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid zone size \"%V\"", &value[1]);
            return NGX_CONF_ERROR;
        }

        rmcf->zone_size = size;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_routes_host(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_routes_main_conf_t  *rmcf = conf;

    char                    *rv, *err;
    u_char                   buf[NGX_MAX_ERROR_STR];
    ngx_int_t                rc;
    ngx_str_t               *value;
    ngx_conf_t               save;
    ngx_http_routes_spec_t  *spec;

    value = cf->args->elts;

    spec = ngx_array_push(&rmcf->specs);
    if (spec == NULL) {
        return NGX_CONF_ERROR;
    }

    rc = ngx_http_routes_parse_host(cf->pool, &value[1], spec, buf,
                                    sizeof(buf), &err);
    if (rc == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    if (rc == NGX_DECLINED) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s", err);
        return NGX_CONF_ERROR;
    }

    spec->file = cf->conf_file->file.name.data;
    spec->line = cf->conf_file->line;

    save = *cf;
    cf->handler = ngx_http_routes_route;
    cf->handler_conf = (char *) spec;

    rv = ngx_conf_parse(cf, NULL);

    *cf = save;

    return rv;
}


static char *
ngx_http_routes_route(ngx_conf_t *cf, ngx_command_t *dummy, void *conf)
{
    ngx_http_routes_spec_t  *spec = (ngx_http_routes_spec_t *) conf;

    char                     *err;
    u_char                    buf[NGX_MAX_ERROR_STR];
    ngx_int_t                 rc;
    ngx_http_routes_route_t  *route;

    route = ngx_array_push(&spec->routes);
    if (route == NULL) {
        return NGX_CONF_ERROR;
    }

    rc = ngx_http_routes_parse_route(cf->pool, cf->args->elts,
                                     cf->args->nelts, route, buf,
                                     sizeof(buf), &err);
    if (rc == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    if (rc == NGX_DECLINED) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%s", err);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_routes_serve(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_routes_srv_conf_t  *rscf = conf;

    if (rscf->serve) {
        return "is duplicate";
    }

    rscf->serve = 1;

    return NGX_CONF_OK;
}


static char *
ngx_http_routes_upstream_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_upstream_srv_conf_t  *uscf;

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);

    if (uscf->peer.init_upstream) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "load balancing method redefined");
    }

    uscf->peer.init_upstream = ngx_http_routes_init_upstream;

    return NGX_CONF_OK;
}


static char *
ngx_http_routes_api(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_routes_api_handler;

    return NGX_CONF_OK;
}


static char *
ngx_http_routes_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_routes_main_conf_t  *rmcf = conf;

    size_t                   size;
    ngx_uint_t               i;
    ngx_http_routes_spec_t  *spec;

    if (!rmcf->enabled) {
        if (rmcf->specs.nelts) {
            spec = rmcf->specs.elts;
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "ingressctl_route_host in %s:%ui needs "
                          "\"ingressctl_routes\" in http{}", spec->file,
                          spec->line);
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    /* room for the table three times over, for changes until a reload */

    size = 0;
    spec = rmcf->specs.elts;

    for (i = 0; i < rmcf->specs.nelts; i++) {
        size += ngx_http_routes_host_size(&spec[i]) + 64;
    }

    size = 3 * size + 4 * 1024 * 1024
           + 2 * rmcf->specs.nelts * sizeof(void *);
    size = ngx_max(size, rmcf->zone_size);
    size = ngx_align(size, ngx_pagesize);

    rmcf->shm_zone = ngx_shared_memory_add(cf, &ngx_http_routes_zone_name,
                                           size,
                                           &ngx_http_ingressctl_routes_module);
    if (rmcf->shm_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    rmcf->shm_zone->init = ngx_http_routes_init_zone;
    rmcf->shm_zone->data = rmcf;
    rmcf->shm_zone->noreuse = 1;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_routes_postconfiguration(ngx_conf_t *cf)
{
    char                           *err;
    u_char                          buf[NGX_MAX_ERROR_STR];
    ngx_uint_t                      i, n, nb, s, k, hash;
    ngx_http_handler_pt            *h;
    ngx_http_routes_spec_t         *spec;
    ngx_http_routes_upstream_t     *u;
    ngx_http_core_srv_conf_t      **cscfp;
    ngx_http_core_main_conf_t      *cmcf;
    ngx_http_routes_srv_conf_t     *rscf;
    ngx_http_routes_main_conf_t    *rmcf;
    ngx_http_upstream_srv_conf_t  **uscfp;
    ngx_http_upstream_main_conf_t  *umcf;
    ngx_http_routes_seen_t         *seen, **dup;

    rmcf = ngx_http_conf_get_module_main_conf(cf,
                                          ngx_http_ingressctl_routes_module);
    if (!rmcf->enabled) {
        return NGX_OK;
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    umcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_upstream_module);

    /* the server that serves routes */

    cscfp = cmcf->servers.elts;

    for (s = 0; s < cmcf->servers.nelts; s++) {
        rscf = cscfp[s]->ctx->srv_conf[ngx_http_ingressctl_routes_module
                                       .ctx_index];
        if (!rscf->serve) {
            continue;
        }

        if (rmcf->server) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "ingressctl_routes_serve in two servers");
            return NGX_ERROR;
        }

        rmcf->server = cscfp[s];
    }

#if (NGX_HTTP_SSL && defined SSL_CTRL_SET_TLSEXT_HOSTNAME)
    {
    ngx_http_ssl_srv_conf_t  *sscf;

    for (s = 0; s < cmcf->servers.nelts; s++) {
        sscf = cscfp[s]->ctx->srv_conf[ngx_http_ssl_module.ctx_index];

        if (sscf->ssl.ctx) {
            SSL_CTX_set_tlsext_servername_callback(sscf->ssl.ctx,
                                                   ngx_http_routes_servername);
        }
    }
    }
#endif

    /* the upstream blocks by name */

    uscfp = umcf->upstreams.elts;
    n = umcf->upstreams.nelts;

    for (nb = 64; nb < 2 * n; nb <<= 1) { /* void */ }

    rmcf->upstreams = ngx_palloc(cf->pool,
                                 (n + 1) * sizeof(ngx_http_routes_upstream_t));
    rmcf->upstream_buckets = ngx_palloc(cf->pool, nb * sizeof(ngx_int_t));
    if (rmcf->upstreams == NULL || rmcf->upstream_buckets == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < nb; i++) {
        rmcf->upstream_buckets[i] = -1;
    }

    rmcf->upstream_mask = nb - 1;
    k = 0;

    for (i = 0; i < n; i++) {
        if (!(uscfp[i]->flags & NGX_HTTP_UPSTREAM_CREATE)
            || uscfp[i]->srv_conf == NULL
            || uscfp[i]->peer.init_upstream == ngx_http_routes_init_upstream)
        {
            continue;
        }

        hash = ngx_hash_key_lc(uscfp[i]->host.data, uscfp[i]->host.len);
        u = &rmcf->upstreams[k];
        u->hash = hash;
        u->uscf = uscfp[i];
        u->next = rmcf->upstream_buckets[hash & rmcf->upstream_mask];
        rmcf->upstream_buckets[hash & rmcf->upstream_mask] = k;
        k++;
    }

    /* every host of the configuration checked, and none twice */

    spec = rmcf->specs.elts;

    if (rmcf->specs.nelts && rmcf->server == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "ingressctl_route_host in %s:%ui: no server has "
                      "\"ingressctl_routes_serve\"", spec->file, spec->line);
        return NGX_ERROR;
    }

    for (nb = 64; nb < 2 * rmcf->specs.nelts; nb <<= 1) { /* void */ }

    dup = ngx_pcalloc(cf->temp_pool, nb * sizeof(ngx_http_routes_seen_t *));
    if (dup == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < rmcf->specs.nelts; i++) {
        err = ngx_http_routes_check(rmcf, &spec[i], buf, sizeof(buf));

        if (err != NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0, "%s in %s:%ui", err,
                          spec[i].file, spec[i].line);
            return NGX_ERROR;
        }

        ngx_strlow(spec[i].name.data, spec[i].name.data, spec[i].name.len);
        hash = ngx_hash_key(spec[i].name.data, spec[i].name.len);

        for (seen = dup[hash & (nb - 1)]; seen; seen = seen->next) {
            if (seen->spec->name.len == spec[i].name.len
                && ngx_memcmp(seen->spec->name.data, spec[i].name.data,
                              spec[i].name.len) == 0)
            {
                ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                              "duplicate route host \"%V\" in %s:%ui (also "
                              "in %s:%ui)", &spec[i].name, spec[i].file,
                              spec[i].line, seen->spec->file,
                              seen->spec->line);
                return NGX_ERROR;
            }
        }

        seen = ngx_palloc(cf->temp_pool, sizeof(ngx_http_routes_seen_t));
        if (seen == NULL) {
            return NGX_ERROR;
        }

        seen->spec = &spec[i];
        seen->next = dup[hash & (nb - 1)];
        dup[hash & (nb - 1)] = seen;
    }

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_SERVER_REWRITE_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_routes_handler;

    return NGX_OK;
}


static ngx_int_t
ngx_http_routes_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_routes_main_conf_t  *rmcf = shm_zone->data;

    u_char                    *mem;
    size_t                     size;
    ngx_uint_t                 i, nb;
    ngx_slab_pool_t           *shpool;
    ngx_http_routes_host_t    *h, **hp;
    ngx_http_routes_spec_t    *spec;
    ngx_http_routes_shctx_t   *sh;

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    sh = ngx_slab_alloc(shpool, sizeof(ngx_http_routes_shctx_t));
    if (sh == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(sh, sizeof(ngx_http_routes_shctx_t));

    for (nb = 1024; nb < 2 * rmcf->specs.nelts; nb <<= 1) { /* void */ }

    sh->nbuckets = nb;
    sh->buckets = ngx_slab_calloc(shpool, nb * sizeof(void *));
    if (sh->buckets == NULL) {
        return NGX_ERROR;
    }

    shpool->data = sh;
    shpool->log_ctx = ngx_slab_alloc(shpool,
                                     sizeof(" in ingressctl routes zone"));
    if (shpool->log_ctx == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(shpool->log_ctx, " in ingressctl routes zone%Z");

    spec = rmcf->specs.elts;

    for (i = 0; i < rmcf->specs.nelts; i++) {
        size = ngx_http_routes_host_size(&spec[i]);

        mem = ngx_slab_alloc(shpool, size);
        if (mem == NULL) {
            return NGX_ERROR;
        }

        h = ngx_http_routes_host_build(mem, &spec[i]);
        hp = ngx_http_routes_find(sh, h->name.data, h->name.len, h->hash);
        *hp = h;

        sh->hosts++;
        sh->routes += h->nroutes;
    }

    return NGX_OK;
}
