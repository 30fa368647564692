import FaceDetection
import Foundation
import Media
import MomentsModel
import MomentsSupport
import Synchronization

/// A face the analysis saw: where it is, as fractions of the stored picture (so a crop window can
/// keep it in view), and its size as a share of the picture's shorter side. Only counts and sizes
/// leave the analysis (in its report), never a picture of a face or anything that tells faces apart.
public struct FaceBox: Sendable, Equatable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double
    public var size: Double

    public var centreX: Double { x + width / 2 }
    public var centreY: Double { y + height / 2 }
}

extension FaceDetector {
    /// The frontal-face cascade of Debian's opencv-data, read once; the reason when it cannot be.
    /// `FACE_CASCADE` names another file (OpenCV elsewhere, as on macOS), or, empty, none:
    /// faces are then not looked for.
    static let standard: Result<FaceDetector, FaceCascade.Malformed> = {
        let path = ProcessInfo.processInfo.environment["FACE_CASCADE"] ?? FaceCascade.standardPath
        guard !path.isEmpty else { return .failure(FaceCascade.Malformed(description: "FACE_CASCADE is empty")) }
        do {
            return .success(FaceDetector(cascade: try FaceCascade(contentsOf: path)))
        } catch let error as FaceCascade.Malformed {
            return .failure(FaceCascade.Malformed(description: "\(error.description) (the opencv-data package installs it)"))
        } catch {
            return .failure(FaceCascade.Malformed(description: "\(error)"))
        }
    }()
}

/// Looks for faces in decoded pictures: each is shrunk (area averaging) into a `box` × `box` grey
/// picture, turned upright (a phone held upright records its picture on its side), and searched.
/// One per thread: it keeps its scaler and picture.
final class FaceFinder {
    /// The side of the square the pictures searched fit in: faces down to a tenth of the shorter
    /// side of a 16:9 picture still fill the cascade's 24-pixel window.
    static let box = 320

    private let detector: FaceDetector
    private let scaler: Scaler
    private let target: Frame
    private let rotation: Int
    private var upright: [UInt8] = []

    init(detector: FaceDetector, info: MediaInfo) throws {
        self.detector = detector
        let size = Thumbnailer.fitted(
            width: info.width, height: info.height, sampleAspectRatio: info.sampleAspectRatio,
            box: min(Self.box, max(info.width, info.height)))
        scaler = Scaler(width: size.width, height: size.height, format: .gray8, filter: .area)
        target = try Frame.video(width: size.width, height: size.height, format: .gray8)
        rotation = (info.rotation % 360 + 360) % 360
    }

    func faces(in frame: Frame) throws -> [FaceBox] {
        try scaler.scale(frame, into: target)
        let (data, stride) = target.plane(0)
        let plane = UnsafeBufferPointer(start: data, count: (scaler.height - 1) * stride + scaler.width)
        return Self.faces(
            in: plane, width: scaler.width, height: scaler.height, stride: stride, rotation: rotation,
            detector: detector, upright: &upright)
    }

    /// The stored pixel of a `width` × `height` picture turned by `rotation` that is shown at
    /// (`ux`, `uy`) upright: stored (x, y) is shown at (h − 1 − y, x) turned 90°, at
    /// (w − 1 − x, h − 1 − y) turned 180° and at (y, w − 1 − x) turned 270°.
    static func stored(_ ux: Int, _ uy: Int, width w: Int, height h: Int, rotation: Int) -> (x: Int, y: Int) {
        switch rotation {
        case 90: (uy, h - 1 - ux)
        case 180: (w - 1 - ux, h - 1 - uy)
        case 270: (w - 1 - uy, ux)
        default: (ux, uy)
        }
    }

    /// The faces in a grey `width` × `height` picture stored turned by `rotation` (as the video
    /// says), searched upright in `upright` and placed back in the stored picture.
    static func faces(
        in data: UnsafeBufferPointer<UInt8>, width w: Int, height h: Int, stride: Int, rotation: Int,
        detector: FaceDetector, upright: inout [UInt8]
    ) -> [FaceBox] {
        let turned = rotation == 90 || rotation == 270
        let (uw, uh) = turned ? (h, w) : (w, h)
        upright.removeAll(keepingCapacity: true)
        upright.reserveCapacity(uw * uh)
        for uy in 0..<uh {
            for ux in 0..<uw {
                let (x, y) = stored(ux, uy, width: w, height: h, rotation: rotation)
                upright.append(data[y * stride + x])
            }
        }
        let found = upright.withUnsafeBufferPointer { detector.faces(in: $0, width: uw, height: uh, stride: uw) }
        let shorter = Double(min(uw, uh)), wide = Double(w), high = Double(h)
        return found.map { face in
            let (fx, fy, s) = (face.x, face.y, face.size)
            // The face's square back in the stored picture.
            let (x, y): (Double, Double) =
                switch rotation {
                case 90: (fy, high - fx - s)
                case 180: (wide - fx - s, high - fy - s)
                case 270: (wide - fy - s, fx)
                default: (fx, fy)
                }
            return FaceBox(x: x / wide, y: y / high, width: s / wide, height: s / high, size: s / shorter)
        }
    }
}

/// Searches pictures for faces on a thread of its own, so the thread that decoded them goes on
/// meanwhile: a single sample runner (10-bit or larger pictures), whose runs the scan waits for,
/// and the scan's own dense decoding. Without a thread, on the caller's: each of two runners
/// (one searches while the other decodes), and a lean scan (its pictures are too large to keep
/// one more of).
final class FaceSearch: @unchecked Sendable {
    // Used only on `thread` (or, without one, on the caller's).
    private let finder: FaceFinder
    private let thread: SerialThread?

    /// `label` names the thread; nil: no thread.
    init(detector: FaceDetector, info: MediaInfo, label: String?) throws {
        finder = try FaceFinder(detector: detector, info: info)
        thread = try label.map { try SerialThread(name: $0) }
    }

    /// Calls `found` with the faces in `picture` (nil when the scaler refuses it, as a picture not
    /// searched), on the thread, or before returning without one. The picture is referenced
    /// there and nowhere else.
    func search(_ picture: Frame, then found: @escaping ([FaceBox]?) -> Void) {
        let work = Work(picture: picture, found: found)
        if let thread {
            thread.async { self.run(work) }
        } else {
            run(work)
        }
    }

    private func run(_ work: Work) { work.found(try? finder.faces(in: work.picture)) }

    private struct Work: @unchecked Sendable {
        let picture: Frame
        let found: ([FaceBox]?) -> Void
    }
}

/// The faces found in the pictures a scan handed to a `FaceSearch`, by the index of their sample.
final class FacesFound: Sendable {
    private let found = Mutex<[Int: [FaceBox]]>([:])
    private let pending = DispatchGroup()

    /// A search for sample `index` begins.
    func expect() { pending.enter() }

    func record(_ faces: [FaceBox]?, at index: Int) {
        if let faces { found.withLock { $0[index] = faces } }
        pending.leave()
    }

    /// Waits for every search begun, and returns what they found.
    func all() -> [Int: [FaceBox]] {
        pending.wait()
        return found.withLock { $0 }
    }
}
