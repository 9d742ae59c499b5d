/* rpc_health.c: grpc.health.v1.Health/Check, the standard health probe.
 *
 * The daemon serves two names: "" (the whole server) and "amp.v1.Amp".
 * Both are SERVING until a drain starts, NOT_SERVING after; any other name
 * is NOT_FOUND, as the health checking protocol asks.
 */
#include "rpc.h"

#include <string.h>

#include "grpc/health/v1/health.pb-c.h"

#define RPC_HEALTH_SERVICE "amp.v1.Amp"

void rpc_health_check(struct rpc_call *rc, ProtobufCMessage *req)
{
    const Grpc__Health__V1__HealthCheckRequest *r = (const void *)req;
    if (r->service[0] && strcmp(r->service, RPC_HEALTH_SERVICE) != 0) {
        rpc_fail(rc, STATUS_NOT_FOUND, "unknown service \"%s\"", r->service);
        return;
    }
    Grpc__Health__V1__HealthCheckResponse reply = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    reply.status = rc->env->draining
                       ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING
                       : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
    rpc_reply(rc, &reply.base);
}
