/* SPDX-License-Identifier: MIT */
/* data_frame.c: the DATA frame size both ends ask nghttp2 for (data_frame.h). */
#include "data_frame.h"

ssize_t data_frame_len(nghttp2_session *ng, uint8_t frame_type, int32_t stream_id,
                       int32_t session_window, int32_t stream_window, uint32_t remote_max_frame,
                       void *user_data)
{
    (void)ng, (void)frame_type, (void)stream_id, (void)user_data;
    int64_t n = DATA_FRAME_MAX;
    if (n > session_window)
        n = session_window;
    if (n > stream_window)
        n = stream_window;
    if (n > (int64_t)remote_max_frame)
        n = remote_max_frame;
    return (ssize_t)(n > 0 ? n : 1);
}
