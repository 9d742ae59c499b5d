/* notify.c: the service manager's notify socket (see notify.h). */
#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"

void notify_state(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !path[0])
        return;
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    size_t len = strlen(path);
    if (len >= sizeof addr.sun_path || (path[0] != '/' && path[0] != '@')) {
        log_msg(LOG_WARN, "NOTIFY_SOCKET \"%s\" is not a socket path; not notifying", path);
        return;
    }
    memcpy(addr.sun_path, path, len);
    if (path[0] == '@')
        addr.sun_path[0] = '\0'; /* abstract namespace */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&addr,
                         (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
        log_msg(LOG_WARN, "notifying %s of %s: %s", path, state, strerror(errno));
    if (fd >= 0)
        close(fd);
}
