import CFFmpeg

/// Owns an output `AVFormatContext` and its file: add streams, write header, packets, trailer.
public final class OutputFile {
    package let pointer: UnsafeMutablePointer<AVFormatContext>
    public let path: String
    private var sourceTimeBases: [Int: AVRational] = [:]
    private var headerWritten = false
    private var closed = false

    /// `format` is a muxer name (`mp4`, `mov`, `matroska`, …); nil guesses from the extension.
    public init(path: String, format: String? = nil) throws(FFmpegError) {
        self.path = path
        var context: UnsafeMutablePointer<AVFormatContext>? = nil
        try check(avformat_alloc_output_context2(&context, nil, format, path), "avformat_alloc_output_context2")
        pointer = context!
        if pointer.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
            try check(avio_open(&pointer.pointee.pb, path, AVIO_FLAG_WRITE), "avio_open")
        }
    }

    deinit {
        if !closed && pointer.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 { avio_closep(&pointer.pointee.pb) }
        avformat_free_context(pointer)
    }

    /// Whether codecs must put their extradata in the container (true for MP4/MOV/MKV).
    public var wantsGlobalHeader: Bool { pointer.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER != 0 }

    /// Adds a stream carrying `encoder`'s output and returns its index.
    @discardableResult
    public func addStream(for encoder: Encoder, rotation: Int = 0) throws(FFmpegError) -> Int {
        guard let stream = avformat_new_stream(pointer, nil) else { throw FFmpegError(moments_averror_enomem(), "avformat_new_stream") }
        try check(avcodec_parameters_from_context(stream.pointee.codecpar, encoder.context), "avcodec_parameters_from_context")
        stream.pointee.time_base = encoder.timeBase.av
        stream.pointee.sample_aspect_ratio = encoder.context.pointee.sample_aspect_ratio
        // The nominal rate, which muxers read for a timecode track.
        if encoder.context.pointee.framerate.num > 0 { stream.pointee.avg_frame_rate = encoder.context.pointee.framerate }
        if rotation != 0, let matrix = av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, 9 * 4) {
            // Written so that readers (ffmpeg's autorotate, AVPlayer, `MediaStream.rotation`) turn the
            // picture `rotation` degrees clockwise: an iPhone portrait clip has rotation 90 (ffprobe: −90).
            av_display_rotation_set(UnsafeMutableRawPointer(matrix).assumingMemoryBound(to: Int32.self), Double(rotation))
        }
        let index = Int(stream.pointee.index)
        sourceTimeBases[index] = encoder.timeBase.av
        return index
    }

    /// Adds a stream that carries `source`'s packets unchanged (stream copy) and returns its index.
    /// The stream's side data (display matrix, Dolby Vision configuration, HDR mastering metadata)
    /// comes along; `tag` names the sample entry (`hvc1` for HEVC that AVPlayer plays), or the
    /// muxer's default when nil.
    @discardableResult
    public func addStream(copying source: MediaStream, tag: String? = nil) throws(FFmpegError) -> Int {
        guard let stream = avformat_new_stream(pointer, nil) else { throw FFmpegError(moments_averror_enomem(), "avformat_new_stream") }
        try check(avcodec_parameters_copy(stream.pointee.codecpar, source.parameters), "avcodec_parameters_copy")
        stream.pointee.codecpar.pointee.codec_tag = tag.map(Self.fourCC) ?? 0
        stream.pointee.time_base = source.timeBase.av
        stream.pointee.sample_aspect_ratio = source.pointer.pointee.sample_aspect_ratio
        let sideData = source.pointer.pointee.side_data
        for i in 0..<Int(source.pointer.pointee.nb_side_data) {
            guard let entry = sideData?[i], entry.size > 0, let data = entry.data,
                let copy = av_stream_new_side_data(stream, entry.type, Int(entry.size))
            else { continue }
            copy.update(from: data, count: Int(entry.size))
        }
        let index = Int(stream.pointee.index)
        sourceTimeBases[index] = source.timeBase.av
        return index
    }

    static func fourCC(_ tag: String) -> UInt32 {
        let b = Array(tag.utf8.prefix(4)) + [UInt8](repeating: 32, count: max(0, 4 - tag.utf8.count))
        return UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
    }

    /// Sets the file's metadata entry `key` (before the header; `timecode` makes MOV/MP4 write a timecode track).
    public func setMetadata(_ key: String, _ value: String) {
        av_dict_set(&pointer.pointee.metadata, key, value, 0)
    }

    /// Writes the header. `options` are muxer options such as `["movflags": "+faststart"]`.
    public func writeHeader(options: [String: String] = [:]) throws(FFmpegError) {
        var dictionary: OpaquePointer? = nil
        for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
        defer { av_dict_free(&dictionary) }
        try check(avformat_write_header(pointer, &dictionary), "avformat_write_header")
        headerWritten = true
    }

    /// Rescales `packet` from its encoder's (or copied stream's) time base to the stream's and writes it interleaved.
    public func write(_ packet: Packet, stream index: Int) throws(FFmpegError) {
        let stream = pointer.pointee.streams[index]!
        packet.pointer.pointee.stream_index = Int32(index)
        av_packet_rescale_ts(packet.pointer, sourceTimeBases[index]!, stream.pointee.time_base)
        try check(av_interleaved_write_frame(pointer, packet.pointer), "av_interleaved_write_frame")
    }

    /// Writes the trailer and closes the file.
    public func finish() throws(FFmpegError) {
        guard headerWritten, !closed else { return }
        try check(av_write_trailer(pointer), "av_write_trailer")
        if pointer.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 { avio_closep(&pointer.pointee.pb) }
        closed = true
    }
}
