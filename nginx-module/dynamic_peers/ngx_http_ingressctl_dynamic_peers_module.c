/*
 * ingressctl's dynamic peers: rewrite the servers of upstreams declared with
 * `zone` without reloading NGINX.
 *
 *   upstream backend {
 *       zone upstreams;
 *       least_conn;                       # any built-in balancer, optional
 *       server 10.0.0.1:80 max_fails=1 fail_timeout=10s;
 *       server 10.0.0.1:80 max_fails=1 fail_timeout=10s down;   # spare slots
 *       ingressctl_dynamic_peers;         # after the balancer, before keepalive
 *       keepalive 32;
 *   }
 *
 *   server {
 *       listen unix:/run/ingressctl-api.sock;
 *       location /dynamic-peers { ingressctl_dynamic_peers_api; }
 *   }
 *
 * The API takes POST bodies of lines "<upstream> [<ip:port> ...]" and makes
 * each named upstream serve exactly those addresses: the slots (the `server`
 * lines of the configuration) keep their number, their weight and their
 * max_fails / fail_timeout / max_conns; an address that is already served keeps
 * its slot (and its balancer state); new addresses take slots that are not
 * needed any more; the slots left over are marked down.  A body is checked
 * completely before anything is applied: any error (an unknown or non-dynamic
 * upstream, a bad address, more addresses than slots) answers 4xx and changes
 * nothing.  GET answers one line per dynamic upstream with its served
 * addresses.
 *
 * Guarantees:
 * - Peers live in the upstream zone (shared by every worker); their addresses
 *   and names are moved at start into a table in this module's own zone, one
 *   fixed-size entry per slot, so a rewrite is done in place, under the peers'
 *   write lock, and is seen by every worker at once.  Both zones are created
 *   afresh by each reload (the upstream zone is `noreuse`), so a reload starts
 *   again from the configuration.
 * - A request copies its peer's address and name (under the peers' read lock)
 *   as soon as the balancer picked it, so a rewrite never changes the address
 *   of a connection in progress, and the keepalive cache (which wraps this
 *   module) stores the address the connection was really made to.
 * - The balancer state of a rewritten slot is reset (fails, weights, SSL
 *   session); its connection count is kept, as connections made to the old
 *   address are still counted down when they end.  `tries` follows the number
 *   of live slots, so proxy_next_upstream retries as with a configuration that
 *   listed them.
 */

#include "ngx_http_ingressctl_dynamic_peers.h"


typedef struct {
    void                               *data;
    ngx_event_get_peer_pt               original_get_peer;
    ngx_event_free_peer_pt              original_free_peer;
#if (NGX_SSL || NGX_COMPAT)
    ngx_event_set_peer_session_pt       original_set_session;
    ngx_event_save_peer_session_pt      original_save_session;
#endif
    ngx_sockaddr_t                      sockaddr;
    ngx_str_t                           name;
    u_char                              name_data[NGX_SOCKADDR_STRLEN];
} ngx_http_dynamic_peers_peer_data_t;


static void *ngx_http_dynamic_peers_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_dynamic_peers_create_srv_conf(ngx_conf_t *cf);
static ngx_int_t ngx_http_dynamic_peers_postconfiguration(ngx_conf_t *cf);
static char *ngx_http_dynamic_peers(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_dynamic_peers_api(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_dynamic_peers_init_upstream(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_dynamic_peers_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static ngx_int_t ngx_http_dynamic_peers_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_dynamic_peers_get_peer(ngx_peer_connection_t *pc,
    void *data);
static void ngx_http_dynamic_peers_free_peer(ngx_peer_connection_t *pc,
    void *data, ngx_uint_t state);
#if (NGX_SSL || NGX_COMPAT)
static ngx_int_t ngx_http_dynamic_peers_set_session(ngx_peer_connection_t *pc,
    void *data);
static void ngx_http_dynamic_peers_save_session(ngx_peer_connection_t *pc,
    void *data);
#endif


static ngx_command_t  ngx_http_dynamic_peers_commands[] = {

    { ngx_string("ingressctl_dynamic_peers"),
      NGX_HTTP_UPS_CONF|NGX_CONF_NOARGS,
      ngx_http_dynamic_peers,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("ingressctl_dynamic_peers_api"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_dynamic_peers_api,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_ingressctl_dynamic_peers_module_ctx = {
    NULL,                                    /* preconfiguration */
    ngx_http_dynamic_peers_postconfiguration, /* postconfiguration */

    ngx_http_dynamic_peers_create_main_conf, /* create main configuration */
    NULL,                                    /* init main configuration */

    ngx_http_dynamic_peers_create_srv_conf,  /* create server configuration */
    NULL,                                    /* merge server configuration */

    NULL,                                    /* create location configuration */
    NULL                                     /* merge location configuration */
};


ngx_module_t  ngx_http_ingressctl_dynamic_peers_module = {
    NGX_MODULE_V1,
    &ngx_http_ingressctl_dynamic_peers_module_ctx, /* module context */
    ngx_http_dynamic_peers_commands,       /* module directives */
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


static void *
ngx_http_dynamic_peers_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_dynamic_peers_main_conf_t  *dmcf;

    dmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_dynamic_peers_main_conf_t));
    if (dmcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&dmcf->upstreams, cf->pool, 4,
                       sizeof(ngx_http_upstream_srv_conf_t *))
        != NGX_OK)
    {
        return NULL;
    }

    return dmcf;
}


static void *
ngx_http_dynamic_peers_create_srv_conf(ngx_conf_t *cf)
{
    ngx_http_dynamic_peers_srv_conf_t  *dscf;

    dscf = ngx_pcalloc(cf->pool, sizeof(ngx_http_dynamic_peers_srv_conf_t));
    if (dscf == NULL) {
        return NULL;
    }

    return dscf;
}


static char *
ngx_http_dynamic_peers(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_dynamic_peers_srv_conf_t  *dscf = conf;

    ngx_http_upstream_srv_conf_t  *uscf;

    if (dscf->enabled) {
        return "is duplicate";
    }

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);

    dscf->enabled = 1;
    dscf->original_init_upstream = uscf->peer.init_upstream
                                   ? uscf->peer.init_upstream
                                   : ngx_http_upstream_init_round_robin;

    uscf->peer.init_upstream = ngx_http_dynamic_peers_init_upstream;

    return NGX_CONF_OK;
}


static char *
ngx_http_dynamic_peers_api(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_dynamic_peers_api_handler;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_dynamic_peers_init_upstream(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_upstream_rr_peers_t        *peers;
    ngx_http_upstream_srv_conf_t       **up;
    ngx_http_dynamic_peers_srv_conf_t   *dscf;
    ngx_http_dynamic_peers_main_conf_t  *dmcf;

    dscf = ngx_http_conf_upstream_srv_conf(us,
                                   ngx_http_ingressctl_dynamic_peers_module);

    if (dscf->original_init_upstream(cf, us) != NGX_OK) {
        return NGX_ERROR;
    }

    if (us->shm_zone == NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "ingressctl_dynamic_peers in upstream \"%V\" in %s:%ui "
                      "needs a \"zone\"", &us->host, us->file_name, us->line);
        return NGX_ERROR;
    }

    peers = us->peer.data;

    if (peers == NULL || peers->next != NULL) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "ingressctl_dynamic_peers in upstream \"%V\" in %s:%ui "
                      "cannot take backup servers", &us->host, us->file_name,
                      us->line);
        return NGX_ERROR;
    }

    dscf->original_init_peer = us->peer.init;
    us->peer.init = ngx_http_dynamic_peers_init_peer;

    dmcf = ngx_http_conf_get_module_main_conf(cf,
                                   ngx_http_ingressctl_dynamic_peers_module);

    up = ngx_array_push(&dmcf->upstreams);
    if (up == NULL) {
        return NGX_ERROR;
    }

    *up = us;
    dmcf->slots += peers->number;

    return NGX_OK;
}


static ngx_int_t
ngx_http_dynamic_peers_postconfiguration(ngx_conf_t *cf)
{
    size_t                               size;
    ngx_str_t                            name = ngx_string(
                                             NGX_HTTP_DYNAMIC_PEERS_ZONE);
    ngx_http_dynamic_peers_main_conf_t  *dmcf;

    dmcf = ngx_http_conf_get_module_main_conf(cf,
                                   ngx_http_ingressctl_dynamic_peers_module);

    if (dmcf->upstreams.nelts == 0) {
        return NGX_OK;
    }

    /* the table, the slab allocator's page headers, and a margin */
    size = dmcf->slots * sizeof(ngx_http_dynamic_peers_slot_t);
    size += size / 64 + 64 * ngx_pagesize;

    dmcf->shm_zone = ngx_shared_memory_add(cf, &name, size,
                                   &ngx_http_ingressctl_dynamic_peers_module);
    if (dmcf->shm_zone == NULL) {
        return NGX_ERROR;
    }

    dmcf->shm_zone->init = ngx_http_dynamic_peers_init_zone;
    dmcf->shm_zone->data = dmcf;
    dmcf->shm_zone->noreuse = 1;

    return NGX_OK;
}


/*
 * Runs in the master once the upstream zones were filled (they were added
 * while the configuration was parsed, this zone after it): point every slot's
 * address and name at its own entry of the table.
 */

static ngx_int_t
ngx_http_dynamic_peers_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_dynamic_peers_main_conf_t  *dmcf = shm_zone->data;

    ngx_uint_t                       i, n;
    ngx_slab_pool_t                 *shpool;
    ngx_http_upstream_rr_peer_t     *peer;
    ngx_http_upstream_rr_peers_t    *peers;
    ngx_http_upstream_srv_conf_t   **uscfp;
    ngx_http_dynamic_peers_slot_t   *slots;

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    slots = ngx_slab_calloc(shpool,
                            dmcf->slots * sizeof(ngx_http_dynamic_peers_slot_t));
    if (slots == NULL) {
        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "ingressctl_dynamic_peers: no memory for %ui slots",
                      dmcf->slots);
        return NGX_ERROR;
    }

    uscfp = dmcf->upstreams.elts;
    n = 0;

    for (i = 0; i < dmcf->upstreams.nelts; i++) {
        peers = uscfp[i]->peer.data;

        if (peers->shpool == NULL) {
            ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                          "ingressctl_dynamic_peers: upstream \"%V\" is not "
                          "in a shared zone", &uscfp[i]->host);
            return NGX_ERROR;
        }

        for (peer = peers->peer; peer; peer = peer->next) {
            if (n == dmcf->slots) {
                return NGX_ERROR;
            }

            ngx_memcpy(&slots[n].sockaddr, peer->sockaddr,
                       ngx_min(peer->socklen, sizeof(ngx_sockaddr_t)));
            peer->sockaddr = &slots[n].sockaddr.sockaddr;

            peer->name.len = ngx_min(peer->name.len, NGX_SOCKADDR_STRLEN);
            ngx_memcpy(slots[n].name, peer->name.data, peer->name.len);
            peer->name.data = slots[n].name;

            n++;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_dynamic_peers_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_upstream_t                 *u;
    ngx_http_dynamic_peers_srv_conf_t   *dscf;
    ngx_http_dynamic_peers_peer_data_t  *dp;

    dscf = ngx_http_conf_upstream_srv_conf(us,
                                   ngx_http_ingressctl_dynamic_peers_module);

    dp = ngx_palloc(r->pool, sizeof(ngx_http_dynamic_peers_peer_data_t));
    if (dp == NULL) {
        return NGX_ERROR;
    }

    if (dscf->original_init_peer(r, us) != NGX_OK) {
        return NGX_ERROR;
    }

    u = r->upstream;

    dp->data = u->peer.data;
    dp->original_get_peer = u->peer.get;
    dp->original_free_peer = u->peer.free;
    dp->name.len = 0;
    dp->name.data = dp->name_data;

    u->peer.data = dp;
    u->peer.get = ngx_http_dynamic_peers_get_peer;
    u->peer.free = ngx_http_dynamic_peers_free_peer;

#if (NGX_SSL || NGX_COMPAT)
    dp->original_set_session = u->peer.set_session;
    dp->original_save_session = u->peer.save_session;
    u->peer.set_session = ngx_http_dynamic_peers_set_session;
    u->peer.save_session = ngx_http_dynamic_peers_save_session;
#endif

    return NGX_OK;
}


static ngx_int_t
ngx_http_dynamic_peers_get_peer(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_dynamic_peers_peer_data_t  *dp = data;

    ngx_int_t                          rc;
    ngx_http_upstream_rr_peer_t       *peer;
    ngx_http_upstream_rr_peers_t      *peers;
    ngx_http_upstream_rr_peer_data_t  *rrp;

    rc = dp->original_get_peer(pc, dp->data);

    if (rc != NGX_OK) {
        return rc;
    }

    /*
     * Every built-in balancer's peer data starts with the round-robin one,
     * whose `current` is the peer just picked.
     */

    rrp = dp->data;
    peers = rrp->peers;
    peer = rrp->current;

    ngx_http_upstream_rr_peers_rlock(peers);

    if (peer != NULL) {
        pc->socklen = ngx_min(peer->socklen, sizeof(ngx_sockaddr_t));
        ngx_memcpy(&dp->sockaddr, peer->sockaddr, pc->socklen);
        dp->name.len = ngx_min(peer->name.len, NGX_SOCKADDR_STRLEN);
        ngx_memcpy(dp->name_data, peer->name.data, dp->name.len);

    } else {
        pc->socklen = ngx_min(pc->socklen, sizeof(ngx_sockaddr_t));
        ngx_memcpy(&dp->sockaddr, pc->sockaddr, pc->socklen);
        dp->name.len = ngx_min(pc->name->len, NGX_SOCKADDR_STRLEN);
        ngx_memcpy(dp->name_data, pc->name->data, dp->name.len);
    }

    ngx_http_upstream_rr_peers_unlock(peers);

    pc->sockaddr = &dp->sockaddr.sockaddr;
    pc->name = &dp->name;

    return NGX_OK;
}


static void
ngx_http_dynamic_peers_free_peer(ngx_peer_connection_t *pc, void *data,
    ngx_uint_t state)
{
    ngx_http_dynamic_peers_peer_data_t  *dp = data;

    dp->original_free_peer(pc, dp->data, state);
}


#if (NGX_SSL || NGX_COMPAT)

static ngx_int_t
ngx_http_dynamic_peers_set_session(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_dynamic_peers_peer_data_t  *dp = data;

    if (dp->original_set_session == NULL) {
        return NGX_OK;
    }

    return dp->original_set_session(pc, dp->data);
}


static void
ngx_http_dynamic_peers_save_session(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_dynamic_peers_peer_data_t  *dp = data;

    if (dp->original_save_session != NULL) {
        dp->original_save_session(pc, dp->data);
    }
}

#endif
