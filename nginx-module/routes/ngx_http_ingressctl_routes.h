/*
 * ingressctl's routes: hosts served from a table in shared memory instead of
 * server blocks; see ngx_http_ingressctl_routes_module.c.
 */

#ifndef _NGX_HTTP_INGRESSCTL_ROUTES_H_INCLUDED_
#define _NGX_HTTP_INGRESSCTL_ROUTES_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>


#define NGX_HTTP_ROUTES_MAX_FIELD   4096

/* the variables a route sets, in ngx_http_routes_set_names[] order */
#define NGX_HTTP_ROUTES_VAR_SERVICE     0
#define NGX_HTTP_ROUTES_VAR_TYPE        1
#define NGX_HTTP_ROUTES_VAR_NAME        2
#define NGX_HTTP_ROUTES_VAR_NAMESPACE   3
#define NGX_HTTP_ROUTES_VAR_UPSTREAM    4
#define NGX_HTTP_ROUTES_VARS            5


/* one route of a host, as the table keeps it */
typedef struct {
    ngx_uint_t                      exact;     /* `= path`, else a prefix */
    ngx_str_t                       path;
    ngx_str_t                       location;  /* named location, no `@` */
    ngx_str_t                       upstream;
    ngx_str_t                       service;
    off_t                           max_body;  /* 0: no limit */
} ngx_http_routes_route_t;


/* one host with its routes: one allocation, strings after the routes */
typedef struct ngx_http_routes_host_s  ngx_http_routes_host_t;

struct ngx_http_routes_host_s {
    ngx_http_routes_host_t         *next;      /* in its bucket */
    ngx_uint_t                      hash;
    size_t                          size;      /* of this allocation */
    ngx_str_t                       name;      /* lower case */
    ngx_str_t                       ns;
    ngx_str_t                       resource;
    ngx_str_t                       certificate;  /* "": not a TLS host */
    ngx_uint_t                      redirect;  /* 0, or the code of http */
    ngx_uint_t                      redirect_port;
    ngx_uint_t                      nroutes;
    ngx_http_routes_route_t        *routes;    /* exact, then longest first */
};


/* a host as parsed from the configuration or the API, not yet stored */
typedef struct {
    ngx_str_t                       name;
    ngx_str_t                       ns;
    ngx_str_t                       resource;
    ngx_str_t                       certificate;
    ngx_uint_t                      redirect;
    ngx_uint_t                      redirect_port;
    ngx_uint_t                      remove;    /* API: delete the host */
    ngx_array_t                     routes;    /* ngx_http_routes_route_t */
    u_char                         *file;      /* where it was declared */
    ngx_uint_t                      line;
} ngx_http_routes_spec_t;


/* the shared zone's root */
typedef struct {
    ngx_atomic_t                    lock;      /* ngx_rwlock */
    ngx_uint_t                      nbuckets;  /* a power of two */
    ngx_http_routes_host_t        **buckets;
    ngx_uint_t                      hosts;
    ngx_uint_t                      routes;
    ngx_uint_t                      updates;   /* API batches applied */
} ngx_http_routes_shctx_t;


typedef struct {
    ngx_uint_t                      hash;
    ngx_http_upstream_srv_conf_t   *uscf;
    ngx_int_t                       next;      /* index, -1 ends */
} ngx_http_routes_upstream_t;


typedef struct {
    ngx_flag_t                      enabled;
    size_t                          zone_size;  /* the minimum asked for */
    ngx_shm_zone_t                 *shm_zone;
    ngx_array_t                     specs;     /* ngx_http_routes_spec_t */
    ngx_http_core_srv_conf_t       *server;    /* the one serving routes */

    /* every upstream block, by name (each process's own copy) */
    ngx_http_routes_upstream_t     *upstreams;
    ngx_int_t                      *upstream_buckets;
    ngx_uint_t                      upstream_mask;

    ngx_int_t                       index[NGX_HTTP_ROUTES_VARS];
} ngx_http_routes_main_conf_t;


typedef struct {
    ngx_flag_t                      serve;
} ngx_http_routes_srv_conf_t;


extern ngx_module_t  ngx_http_ingressctl_routes_module;


ngx_int_t ngx_http_routes_api_handler(ngx_http_request_t *r);

ngx_int_t ngx_http_routes_decode(ngx_pool_t *pool, ngx_str_t *in,
    ngx_str_t *out);
char *ngx_http_routes_check(ngx_http_routes_main_conf_t *rmcf,
    ngx_http_routes_spec_t *spec, u_char *buf, size_t len);
ngx_int_t ngx_http_routes_parse_host(ngx_pool_t *pool, ngx_str_t *args,
    ngx_http_routes_spec_t *spec, u_char *buf, size_t len, char **err);
ngx_int_t ngx_http_routes_parse_route(ngx_pool_t *pool, ngx_str_t *args,
    ngx_uint_t nargs, ngx_http_routes_route_t *route, u_char *buf,
    size_t len, char **err);
size_t ngx_http_routes_host_size(ngx_http_routes_spec_t *spec);
ngx_http_routes_host_t *ngx_http_routes_host_build(u_char *mem,
    ngx_http_routes_spec_t *spec);
ngx_http_routes_host_t **ngx_http_routes_find(ngx_http_routes_shctx_t *sh,
    u_char *name, size_t len, ngx_uint_t hash);
ngx_http_upstream_srv_conf_t *ngx_http_routes_upstream(
    ngx_http_routes_main_conf_t *rmcf, ngx_str_t *name);

ngx_int_t ngx_http_routes_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_routes_init_upstream(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us);
ngx_int_t ngx_http_routes_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us);
ngx_int_t ngx_http_routes_unset_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
ngx_int_t ngx_http_routes_certificate_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
#if (NGX_HTTP_SSL && defined SSL_CTRL_SET_TLSEXT_HOSTNAME)
int ngx_http_routes_servername(ngx_ssl_conn_t *ssl_conn, int *ad, void *arg);
#endif


#endif /* _NGX_HTTP_INGRESSCTL_ROUTES_H_INCLUDED_ */
