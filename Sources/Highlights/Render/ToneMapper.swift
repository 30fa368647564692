import CFFmpeg
import Media

/// Turns 10-bit HDR pictures (HLG or PQ, BT.2020) into 8-bit SDR BT.709 ones.
///
/// The conversion itself is libavfilter's: `zscale` to linear light with the HDR reference white
/// (203 cd/m², ITU-R BT.2408) as 1.0, BT.2020 to BT.709 primaries, `tonemap` with a Möbius curve
/// that leaves everything up to 80 % of reference white as it is and rolls the highlights above
/// it off smoothly, then the BT.709 transfer and limited-range Y′CbCr. Running that chain on every
/// 1080p picture costs ~30 ms; instead it runs once, at start-up, over a picture holding every
/// point of a 256 × 64 × 64 grid of (Y, Cb, Cr) codes, and the result is applied as a table:
/// every sample at its own 8 bits of luma, interpolated between the grid's chroma points. Against
/// the chain itself (`ToneMappingTests`) luma is within half a code on average and chroma within
/// two (zscale filters chroma over more samples than the table's 2 × 2 when it converts 4:2:0).
final class ToneMapper {
    static let chain = "zscale=t=linear:npl=203,format=gbrpf32le,zscale=p=bt709,"
        + "tonemap=tonemap=mobius:param=0.8:desat=0,zscale=t=bt709:m=bt709:r=tv,format=yuv444p"
    static let lumaLevels = 256, chromaLevels = 64

    private var lumaTable: [UInt8]
    private var cbTable: [UInt8]
    private var crTable: [UInt8]

    /// Builds the table for pictures tagged with `transfer` (HLG or PQ).
    init(transfer: AVColorTransferCharacteristic) throws {
        let side = 1024  // 256 × 64 × 64 = 1024²
        let grid = try Frame.video(width: side, height: side, format: AV_PIX_FMT_YUV444P10LE)
        grid.setColor(primaries: AVCOL_PRI_BT2020, transfer: transfer, space: AVCOL_SPC_BT2020_NCL, range: AVCOL_RANGE_MPEG)
        let (y, ys) = grid.plane(0), (u, us) = grid.plane(1), (v, vs) = grid.plane(2)
        for index in 0..<(side * side) {
            let row = index / side, column = index % side
            let (l, b, r) = Self.point(index)
            UnsafeMutableRawPointer(y + row * ys).assumingMemoryBound(to: UInt16.self)[column] = UInt16(l * 4)
            UnsafeMutableRawPointer(u + row * us).assumingMemoryBound(to: UInt16.self)[column] = UInt16(b * 16)
            UnsafeMutableRawPointer(v + row * vs).assumingMemoryBound(to: UInt16.self)[column] = UInt16(r * 16)
        }
        let graph = try FilterGraph(width: side, height: side, format: AV_PIX_FMT_YUV444P10LE, description: Self.chain)
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
        guard let tables else { throw FFmpegError(moments_averror_invaliddata(), "tone map table") }
        (lumaTable, cbTable, crTable) = tables
    }

    /// The grid point (luma level, Cb level, Cr level) stored at `index`.
    @inline(__always)
    static func point(_ index: Int) -> (Int, Int, Int) {
        (index >> 12, (index >> 6) & 63, index & 63)
    }

    @inline(__always)
    static func index(_ l: Int, _ b: Int, _ r: Int) -> Int { l << 12 | b << 6 | r }

    /// Maps `source` (10-bit 4:2:0, the output's size) into `destination` (8-bit 4:2:0, same size).
    ///
    /// Each luma sample is looked up with the chroma at its own position (interpolated between the
    /// chroma samples around it, as a 4:2:0 to 4:4:4 conversion does). Each chroma sample is the
    /// mean of the table's chroma at the four luma samples it covers, interpolated between the
    /// grid's chroma points.
    func map(_ source: Frame, into destination: Frame) throws {
        try destination.makeWritable()
        let width = source.width, height = source.height
        let chromaWidth = (width + 1) / 2, chromaHeight = (height + 1) / 2
        let (sy, sys) = source.plane(0), (su, sus) = source.plane(1), (sv, svs) = source.plane(2)
        let (dy, dys) = destination.plane(0), (du, dus) = destination.plane(1), (dv, dvs) = destination.plane(2)
        func row(_ base: UnsafeMutablePointer<UInt8>, _ stride: Int, _ index: Int) -> UnsafePointer<UInt16> {
            UnsafeRawPointer(base + index * stride).assumingMemoryBound(to: UInt16.self)
        }
        lumaTable.withUnsafeBufferPointer { luma in
        cbTable.withUnsafeBufferPointer { cbs in
        crTable.withUnsafeBufferPointer { crs in
            for cy in 0..<chromaHeight {
                // Chroma rows above, at and below (clamped at the picture's edges).
                let cbUp = row(su, sus, max(0, cy - 1)), cbAt = row(su, sus, cy), cbDown = row(su, sus, min(chromaHeight - 1, cy + 1))
                let crUp = row(sv, svs, max(0, cy - 1)), crAt = row(sv, svs, cy), crDown = row(sv, svs, min(chromaHeight - 1, cy + 1))
                let rows = (cy * 2, min(height - 1, cy * 2 + 1))
                let y0 = row(sy, sys, rows.0), y1 = row(sy, sys, rows.1)
                let out0 = dy + rows.0 * dys, out1 = dy + rows.1 * dys
                let outCb = du + cy * dus, outCr = dv + cy * dvs
                for cx in 0..<chromaWidth {
                    let right = min(chromaWidth - 1, cx + 1)
                    // Chroma (×8) at the block's four luma positions: the top row sits a quarter of the
                    // way towards the chroma row above, the bottom a quarter towards the one below; the
                    // right column half-way to the next chroma column.
                    @inline(__always) func at(_ up: UnsafePointer<UInt16>, _ mid: UnsafePointer<UInt16>, _ down: UnsafePointer<UInt16>)
                        -> (Int, Int, Int, Int) {
                        let m0 = Int(mid[cx]), m1 = Int(mid[right])
                        let t0 = 3 * m0 + Int(up[cx]), t1 = 3 * m1 + Int(up[right])
                        let b0 = 3 * m0 + Int(down[cx]), b1 = 3 * m1 + Int(down[right])
                        return (2 * t0, t0 + t1, 2 * b0, b0 + b1)  // ×8
                    }
                    let b = at(cbUp, cbAt, cbDown), r = at(crUp, crAt, crDown)
                    // Bilinear between the grid's chroma points (chroma given ×8, weights out of 128).
                    @inline(__always) func look(_ level: Int, _ b8: Int, _ r8: Int) -> UInt8 {
                        let ib = min(62, b8 >> 7), ir = min(62, r8 >> 7)
                        let wb = min(128, b8 - ib << 7), wr = min(128, r8 - ir << 7)
                        let i = level << 12 | ib << 6 | ir
                        let top = Int(luma[i]) * (128 - wr) + Int(luma[i + 1]) * wr
                        let bottom = Int(luma[i + 64]) * (128 - wr) + Int(luma[i + 65]) * wr
                        return UInt8((top * (128 - wb) + bottom * wb + 8192) >> 14)
                    }
                    let x0 = cx * 2, x1 = min(width - 1, cx * 2 + 1)
                    let l = (min(255, (Int(y0[x0]) + 2) >> 2), min(255, (Int(y0[x1]) + 2) >> 2),
                             min(255, (Int(y1[x0]) + 2) >> 2), min(255, (Int(y1[x1]) + 2) >> 2))
                    out0[x0] = look(l.0, b.0, r.0)
                    out0[x1] = look(l.1, b.1, r.1)
                    out1[x0] = look(l.2, b.2, r.2)
                    out1[x1] = look(l.3, b.3, r.3)
                    // Chroma: bilinear between the grid's chroma points, averaged over the four lumas.
                    let cb = min(1023, Int(cbAt[cx])), cr = min(1023, Int(crAt[cx]))
                    let ib = min(62, cb >> 4), ir = min(62, cr >> 4)
                    let wb = min(16, cb - ib * 16), wr = min(16, cr - ir * 16)
                    let w00 = (16 - wb) * (16 - wr), w01 = (16 - wb) * wr, w10 = wb * (16 - wr), w11 = wb * wr
                    var sumB = 0, sumR = 0
                    for level in [l.0, l.1, l.2, l.3] {
                        let i = level << 12 | ib << 6 | ir
                        sumB += Int(cbs[i]) * w00 + Int(cbs[i + 1]) * w01 + Int(cbs[i + 64]) * w10 + Int(cbs[i + 65]) * w11
                        sumR += Int(crs[i]) * w00 + Int(crs[i + 1]) * w01 + Int(crs[i + 64]) * w10 + Int(crs[i + 65]) * w11
                    }
                    outCb[cx] = UInt8((sumB + 512) >> 10)
                    outCr[cx] = UInt8((sumR + 512) >> 10)
                }
            }
        }}}
        destination.setColor(primaries: AVCOL_PRI_BT709, transfer: AVCOL_TRC_BT709, space: AVCOL_SPC_BT709, range: AVCOL_RANGE_MPEG)
    }
}
