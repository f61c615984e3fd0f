import Foundation
import HTTPWire
import Moya
import NetCore
import Testing

@testable import Gateway

/// `GatewayTarget.unwrapped`: the gateway's plugins find their target however Moya hands it over, and nothing else
/// passes for one.
@Suite struct GatewayTargetTests {
    private struct OtherTarget: TargetType {
        var baseURL: URL { URL(string: "http://127.0.0.1:1")! }
        var path: String { "/other" }
        var method: Moya.Method { .get }
        var task: Moya.Task { .requestPlain }
        var headers: [String: String]? { nil }
    }

    /// A class target that is not the gateway's (its instance sits where a gateway target's would).
    private final class OtherClassTarget: TargetType {
        var baseURL: URL { URL(string: "http://127.0.0.1:1")! }
        var path: String { "/class" }
        var method: Moya.Method { .get }
        var task: Moya.Task { .requestPlain }
        var headers: [String: String]? { nil }
    }

    private static func makeTarget(group: EventLoopGroup) throws -> GatewayTarget {
        let config = try config(
            """
            upstreams:
              stub: { stub: { status: 200 } }
            routes:
              - { name: r, match: { path: /r }, upstream: stub }
            """)
        let upstream = try #require(config.upstreams.first)
        let provider = UpstreamProvider(upstream: upstream, group: group, retries: false)
        return GatewayTarget(
            provider: provider, origin: provider.origin, upstreamTarget: "/r", method: .get, body: Data(),
            stableHeaders: [:], perRequestHeaders: HTTPFields(), flightKey: nil, timeout: nil, retries: nil)
    }

    @Test func aGatewayTargetIsFoundInsideAMultiTargetAndOnItsOwn() throws {
        let group = try EventLoopGroup(threads: 1)
        defer { group.shutdown() }
        let target = try Self.makeTarget(group: group)
        let multi = MultiTarget(target)
        #expect(GatewayTarget.unwrapped(multi) === target)
        let asExistential: TargetType = multi
        #expect(GatewayTarget.unwrapped(asExistential) === target)
        let bare: TargetType = target
        #expect(GatewayTarget.unwrapped(bare) === target)
    }

    @Test func otherTargetsAreNotGatewayTargets() throws {
        #expect(GatewayTarget.unwrapped(MultiTarget(OtherTarget())) == nil)
        #expect(GatewayTarget.unwrapped(MultiTarget(OtherClassTarget())) == nil)
        let plain: TargetType = OtherTarget()
        #expect(GatewayTarget.unwrapped(plain) == nil)
        let wrappedClass: TargetType = MultiTarget(OtherClassTarget())
        #expect(GatewayTarget.unwrapped(wrappedClass) == nil)
        // A `MultiTarget` inside a `MultiTarget` is looked into one level only, as Moya's plugins would see it.
        let group = try EventLoopGroup(threads: 1)
        defer { group.shutdown() }
        let nested: TargetType = MultiTarget(MultiTarget(try Self.makeTarget(group: group)))
        #expect(GatewayTarget.unwrapped(nested) == nil)
    }

    /// The in-place read relies on `MultiTarget` having exactly the layout of an `any TargetType` container.
    @Test func aMultiTargetIsLaidOutAsItsPayload() {
        #expect(MemoryLayout<MultiTarget>.size == MemoryLayout<any TargetType>.size)
        #expect(MemoryLayout<any TargetType>.size == 5 * MemoryLayout<UnsafeRawPointer>.size)
    }
}
