import Foundation

/// How much slower than a normal debug build the tests run: `MOYA_TEST_SLOWDOWN` (scripts/tsan.sh sets 4), else 1.
/// A bound that says "nobody was held up" (not a performance figure) is multiplied by it, so that it still tells a
/// stall from a sanitizer's overhead.
package enum Slowdown {
    package static let factor: Double =
        ProcessInfo.processInfo.environment["MOYA_TEST_SLOWDOWN"].flatMap(Double.init) ?? 1

    /// `duration` scaled by ``factor``.
    package static func scaled(_ duration: Duration) -> Duration { duration * factor }
}
