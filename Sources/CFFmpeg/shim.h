#ifndef MOMENTS_CFFMPEG_SHIM_H
#define MOMENTS_CFFMPEG_SHIM_H

#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/motion_vector.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/samplefmt.h>
#include <libswscale/swscale.h>
#include <libswresample/swresample.h>
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>

// Macros Swift cannot import.
static inline int moments_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int moments_averror_eof(void) { return AVERROR_EOF; }
static inline int moments_averror_eio(void) { return AVERROR(EIO); }
static inline int moments_averror_einval(void) { return AVERROR(EINVAL); }
static inline int moments_averror_enomem(void) { return AVERROR(ENOMEM); }
static inline int moments_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int moments_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int moments_averror_exit(void) { return AVERROR_EXIT; }
static inline int64_t moments_nopts(void) { return AV_NOPTS_VALUE; }
static inline int moments_time_base_q(void) { return AV_TIME_BASE; }

#endif
