import CFFmpeg

/// Owns a libavfilter graph with one video input and one video output, built from a filter
/// description such as `zscale=t=linear,format=gbrpf32le,…`. Frames go in with their size, pixel
/// format and colour tags; what the graph makes comes out.
public final class FilterGraph {
    private var graph: UnsafeMutablePointer<AVFilterGraph>?
    private let source: UnsafeMutablePointer<AVFilterContext>
    private let sink: UnsafeMutablePointer<AVFilterContext>
    private let output = Frame()

    /// A graph for frames of `width` × `height` in `format`, running `description` on one thread.
    public init(width: Int, height: Int, format: PixelFormat, description: String) throws(FFmpegError) {
        guard let graph = avfilter_graph_alloc() else { throw FFmpegError(moments_averror_enomem(), "avfilter_graph_alloc") }
        self.graph = graph
        graph.pointee.nb_threads = 1
        let arguments = "video_size=\(width)x\(height):pix_fmt=\(format.code):time_base=1/90000:pixel_aspect=1/1"
        var source: UnsafeMutablePointer<AVFilterContext>?
        var sink: UnsafeMutablePointer<AVFilterContext>?
        let made = avfilter_graph_create_filter(&source, avfilter_get_by_name("buffer"), "in", arguments, nil, graph)
        guard made >= 0, let source else { avfilter_graph_free(&self.graph); throw FFmpegError(made, "avfilter_graph_create_filter(buffer)") }
        let madeSink = avfilter_graph_create_filter(&sink, avfilter_get_by_name("buffersink"), "out", nil, nil, graph)
        guard madeSink >= 0, let sink else {
            avfilter_graph_free(&self.graph); throw FFmpegError(madeSink, "avfilter_graph_create_filter(buffersink)")
        }
        self.source = source
        self.sink = sink

        // The description's open input is fed by "in", its open output feeds "out".
        var outputs = avfilter_inout_alloc()
        var inputs = avfilter_inout_alloc()
        defer { avfilter_inout_free(&outputs); avfilter_inout_free(&inputs) }
        guard let o = outputs, let i = inputs else { throw FFmpegError(moments_averror_enomem(), "avfilter_inout_alloc") }
        o.pointee.name = av_strdup("in")
        o.pointee.filter_ctx = source
        o.pointee.pad_idx = 0
        o.pointee.next = nil
        i.pointee.name = av_strdup("out")
        i.pointee.filter_ctx = sink
        i.pointee.pad_idx = 0
        i.pointee.next = nil
        try check(avfilter_graph_parse_ptr(graph, description, &inputs, &outputs, nil), "avfilter_graph_parse_ptr")
        try check(avfilter_graph_config(graph, nil), "avfilter_graph_config")
    }

    deinit { avfilter_graph_free(&graph) }

    /// Runs `frame` through the graph and hands each frame that comes out to `body` (valid until
    /// `body` returns).
    public func filter(_ frame: Frame, _ body: (Frame) throws -> Void) throws {
        try check(av_buffersrc_add_frame_flags(source, frame.pointer, Int32(AV_BUFFERSRC_FLAG_KEEP_REF)), "av_buffersrc_add_frame_flags")
        while true {
            output.unref()
            let result = av_buffersink_get_frame(sink, output.pointer)
            if result == moments_averror_eagain() || result == moments_averror_eof() { return }
            try check(result, "av_buffersink_get_frame")
            try body(output)
        }
    }
}
