import Media
import Synchronization

/// Turns 10-bit HDR pictures (HLG or PQ, BT.2020) into 8-bit SDR BT.709 ones.
///
/// The conversion itself is libavfilter's: `zscale` to linear light with the HDR reference white
/// (203 cd/m², ITU-R BT.2408) as 1.0, BT.2020 to BT.709 primaries, `tonemap` with a Möbius curve
/// that leaves everything up to 80 % of reference white as it is and rolls the highlights above
/// it off smoothly, then the BT.709 transfer and limited-range Y′CbCr. That chain is too slow to
/// run on every picture (docs/engine.md); instead it runs once, at start-up, over a picture holding every
/// point of a 256 × 64 × 64 grid of (Y, Cb, Cr) codes, and the result is applied as a table:
/// every sample at its own 8 bits of luma, interpolated between the grid's chroma points. Against
/// the chain itself (`ToneMappingTests`) luma is within a code on average and chroma within two;
/// single pixels on sharp colour edges differ more, where zscale interpolates chroma between
/// samples and the table uses each 2 × 2 block's own.
final class ToneMapper: Sendable {
    /// What becomes of light above 80 % of the reference white.
    enum Highlights: Sendable {
        /// Rolled off smoothly towards SDR white (`tonemap`'s Möbius curve): what the highlight shows.
        case rolledOff
        /// Kept as it is up to the reference white and clipped above it: for the analysis, which
        /// must see a picture within SDR's range as it was (a dissolve a straight blend, a light
        /// switched on a change of brightness), whatever the few brighter highlights become.
        case clipped
    }

    static func chain(_ highlights: Highlights) -> String {
        "zscale=t=linear:npl=203,format=gbrpf32le,zscale=p=bt709,"
            + (highlights == .rolledOff ? "tonemap=tonemap=mobius:param=0.8:desat=0," : "")
            + "zscale=t=bt709:m=bt709:r=tv,format=yuv444p"
    }

    private let lumaTable: [UInt8]
    private let cbTable: [UInt8]
    private let crTable: [UInt8]

    private struct Kind: Hashable {
        let transfer: ColorDescription.Transfer
        let highlights: Highlights
    }

    /// Tables already built in this process, by transfer function and highlights: a worker builds each once.
    private static let built = Mutex<[Kind: ToneMapper]>([:])

    /// The table for `transfer`, built on first use.
    static func shared(for transfer: ColorDescription.Transfer, highlights: Highlights = .rolledOff) throws -> ToneMapper {
        let key = Kind(transfer: transfer, highlights: highlights)
        if let mapper = built.withLock({ $0[key] }) { return mapper }
        let mapper = try ToneMapper(transfer: transfer, highlights: highlights)
        built.withLock { $0[key] = mapper }
        return mapper
    }

    /// Builds the table for pictures tagged with `transfer` (HLG or PQ).
    init(transfer: ColorDescription.Transfer, highlights: Highlights = .rolledOff) throws {
        let side = 1024  // 256 × 64 × 64 = 1024²
        let grid = try Frame.video(width: side, height: side, format: .yuv444p10)
        grid.color = .bt2020(transfer: transfer)
        let (y, ys) = grid.plane(0), (u, us) = grid.plane(1), (v, vs) = grid.plane(2)
        for index in 0..<(side * side) {
            let row = index / side, column = index % side
            let (l, b, r) = Self.point(index)
            UnsafeMutableRawPointer(y + row * ys).assumingMemoryBound(to: UInt16.self)[column] = UInt16(l * 4)
            UnsafeMutableRawPointer(u + row * us).assumingMemoryBound(to: UInt16.self)[column] = UInt16(b * 16)
            UnsafeMutableRawPointer(v + row * vs).assumingMemoryBound(to: UInt16.self)[column] = UInt16(r * 16)
        }
        let graph = try FilterGraph(width: side, height: side, format: .yuv444p10, description: Self.chain(highlights))
        var tables: ([UInt8], [UInt8], [UInt8])?
        try graph.filter(grid) { out in
            func read(_ plane: Int) -> [UInt8] {
                let (data, stride) = out.plane(plane)
                var table = [UInt8](repeating: 0, count: side * side)
                for row in 0..<side { for column in 0..<side { table[row * side + column] = data[row * stride + column] } }
                return table
            }
            tables = (read(0), read(1), read(2))
        }
        guard let tables else { throw FFmpegError.invalidData("tone map table") }
        (lumaTable, cbTable, crTable) = tables
    }

    /// The grid point (luma level, Cb level, Cr level) stored at `index`: the 256 luma levels of
    /// one chroma point lie together, so the four pixels of a 2 × 2 block read neighbouring bytes.
    @inline(__always)
    static func point(_ index: Int) -> (Int, Int, Int) {
        (index & 255, index >> 14, (index >> 8) & 63)
    }

    /// `picture` (10-bit 4:2:0) mapped into a new 8-bit picture of its size, its timestamp kept.
    func mapped(_ picture: Frame) throws -> Frame {
        let target = try Frame.video(width: picture.width, height: picture.height, format: .yuv420p)
        try map(picture, into: target)
        target.pts = picture.pts
        return target
    }

    /// Maps `source` (10-bit 4:2:0, the output's size) into `destination` (8-bit 4:2:0, same size).
    ///
    /// Every sample is looked up at its own 8 bits of luma (chroma samples at their block's mean
    /// luma) and interpolated between the four grid chroma points around its block's chroma.
    func map(_ source: Frame, into destination: Frame) throws {
        try destination.makeWritable()
        let width = source.width, height = source.height
        let (sy, sys) = source.plane(0), (su, sus) = source.plane(1), (sv, svs) = source.plane(2)
        let (dy, dys) = destination.plane(0), (du, dus) = destination.plane(1), (dv, dvs) = destination.plane(2)
        func row(_ base: UnsafeMutablePointer<UInt8>, _ stride: Int, _ index: Int) -> UnsafePointer<UInt16> {
            UnsafeRawPointer(base + index * stride).assumingMemoryBound(to: UInt16.self)
        }
        lumaTable.withUnsafeBufferPointer { lumaBuffer in
            cbTable.withUnsafeBufferPointer { cbBuffer in
                crTable.withUnsafeBufferPointer { crBuffer in
                    let luma = lumaBuffer.baseAddress!, cbs = cbBuffer.baseAddress!, crs = crBuffer.baseAddress!
                    for cy in 0..<((height + 1) / 2) {
                        let cbRow = row(su, sus, cy), crRow = row(sv, svs, cy)
                        let y0 = row(sy, sys, cy * 2), y1 = row(sy, sys, min(height - 1, cy * 2 + 1))
                        let out0 = dy + cy * 2 * dys, out1 = dy + min(height - 1, cy * 2 + 1) * dys
                        let outCb = du + cy * dus, outCr = dv + cy * dvs
                        for cx in 0..<((width + 1) / 2) {
                            let cell = ChromaCell(cb: Int(cbRow[cx]), cr: Int(crRow[cx]))
                            let x0 = cx * 2, x1 = min(width - 1, x0 + 1)
                            let a = Int(y0[x0]), b = Int(y0[x1]), c = Int(y1[x0]), d = Int(y1[x1])
                            out0[x0] = cell.blend(luma, min(255, (a + 2) >> 2))
                            out0[x1] = cell.blend(luma, min(255, (b + 2) >> 2))
                            out1[x0] = cell.blend(luma, min(255, (c + 2) >> 2))
                            out1[x1] = cell.blend(luma, min(255, (d + 2) >> 2))
                            let level = min(255, (a + b + c + d + 8) >> 4)
                            outCb[cx] = cell.blend(cbs, level)
                            outCr[cx] = cell.blend(crs, level)
                        }
                    }
                }
            }
        }
        destination.color = .bt709
    }

    /// Maps the 8-bit Y′CbCr planes of a small 4:4:4 picture of an HDR source (its codes' top 8
    /// bits, as a scaler gives them) to SDR codes as `map` does: the analysis's thumbnails (with
    /// `clipped` highlights), so that its brightness limits (a fade to white, a dark or blown-out
    /// picture) and its blends read an HDR source as an SDR one.
    func mapSmall(y: inout [UInt8], cb: inout [UInt8], cr: inout [UInt8]) {
        lumaTable.withUnsafeBufferPointer { lumaBuffer in
            cbTable.withUnsafeBufferPointer { cbBuffer in
                crTable.withUnsafeBufferPointer { crBuffer in
                    for i in y.indices {
                        let cell = ChromaCell(cb: Int(cb[i]) << 2, cr: Int(cr[i]) << 2)
                        let level = Int(y[i])
                        (y[i], cb[i], cr[i]) = (
                            cell.blend(lumaBuffer.baseAddress!, level), cell.blend(cbBuffer.baseAddress!, level),
                            cell.blend(crBuffer.baseAddress!, level)
                        )
                    }
                }
            }
        }
    }

    /// A 10-bit chroma pair's place among the table's grid chroma points: the four around it and
    /// their weights (sixteenths each way).
    struct ChromaCell {
        let p00: Int, w00: Int, w01: Int, w10: Int, w11: Int

        @inline(__always)
        init(cb: Int, cr: Int) {
            let cb = min(1023, cb), cr = min(1023, cr)
            let ib = min(62, cb >> 4), ir = min(62, cr >> 4)
            let wb = min(16, cb - ib << 4), wr = min(16, cr - ir << 4)
            (w00, w01, w10, w11) = ((16 - wb) * (16 - wr), (16 - wb) * wr, wb * (16 - wr), wb * wr)
            // The four grid chroma points' rows of 256 luma levels start at p00, +256, +16384, +16640.
            p00 = (ib << 6 | ir) << 8
        }

        /// `table`'s value at luma `level`, interpolated between the four chroma points.
        @inline(__always)
        func blend(_ table: UnsafePointer<UInt8>, _ level: Int) -> UInt8 {
            UInt8(
                truncatingIfNeeded: (Int(table[p00 + level]) * w00 + Int(table[p00 + 256 + level]) * w01
                    + Int(table[p00 + 16384 + level]) * w10 + Int(table[p00 + 16640 + level]) * w11 + 128) >> 8)
        }
    }
}
