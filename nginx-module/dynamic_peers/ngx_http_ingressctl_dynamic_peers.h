
/*
 * ingressctl's dynamic peers: what the module's two files share (see
 * ngx_http_ingressctl_dynamic_peers_module.c for what the module does).
 */

#ifndef _NGX_HTTP_INGRESSCTL_DYNAMIC_PEERS_H_INCLUDED_
#define _NGX_HTTP_INGRESSCTL_DYNAMIC_PEERS_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>


#define NGX_HTTP_DYNAMIC_PEERS_ZONE  "ingressctl_dynamic_peers"


typedef struct {
    ngx_sockaddr_t                      sockaddr;
    u_char                              name[NGX_SOCKADDR_STRLEN];
} ngx_http_dynamic_peers_slot_t;


typedef struct {
    ngx_array_t                         upstreams;  /* srv_conf_t * */
    ngx_uint_t                          slots;
    ngx_shm_zone_t                     *shm_zone;
} ngx_http_dynamic_peers_main_conf_t;


typedef struct {
    ngx_flag_t                          enabled;
    ngx_http_upstream_init_pt           original_init_upstream;
    ngx_http_upstream_init_peer_pt      original_init_peer;
} ngx_http_dynamic_peers_srv_conf_t;


extern ngx_module_t  ngx_http_ingressctl_dynamic_peers_module;


/* the API (ngx_http_ingressctl_dynamic_peers_api.c) */
ngx_int_t ngx_http_dynamic_peers_api_handler(ngx_http_request_t *r);


#endif /* _NGX_HTTP_INGRESSCTL_DYNAMIC_PEERS_H_INCLUDED_ */
