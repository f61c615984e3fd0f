import Foundation
import HTTPWire
import Testing

@testable import Gateway

/// `server.buffering`, `routes[].buffering` and `upstreams.X.pool.max_share`: defaults, forms and located errors.
@Suite struct BufferingConfigTests {
    static let routes = """
        upstreams:
          a: { base_url: "http://127.0.0.1:18080" }
        routes:
          - { name: r, match: { path_prefix: /api }, upstream: a }
        """

    @Test func defaults() throws {
        let config = try config(Self.routes)
        #expect(config.server.buffering == BufferingConfig())
        #expect(config.server.buffering.memory == 256 * 1024)
        #expect(config.server.buffering.tempDirectory == "/tmp")
        #expect(config.server.buffering.maxTempFileSize == 1 << 30)
        #expect(config.server.buffering.maxTempTotal == 1 << 30)
        #expect(config.routes[0].buffering)
        #expect(config.upstream(named: "a")?.pool.maxShare == 0.5)
    }

    @Test func everyKeyIsRead() throws {
        let directory = FileManager.default.temporaryDirectory.path
        let config = try config(
            """
            server:
              buffering: { memory: 64KiB, temp_dir: \(directory), max_temp_file_size: 0, max_temp_total: 8GiB }
            upstreams:
              a: { base_url: "http://127.0.0.1:18080", pool: { max_share: 25% } }
              b: { base_url: "http://127.0.0.1:18081", pool: { max_share: 1 } }
              c: { base_url: "http://127.0.0.1:18082", pool: { max_share: 0.75 } }
            routes:
              - { name: r, match: { path_prefix: /api }, upstream: a, buffering: false }
              - { name: s, match: { path_prefix: /b }, upstream: b }
            """)
        #expect(config.server.buffering.memory == 64 * 1024)
        #expect(config.server.buffering.tempDirectory == directory)
        #expect(config.server.buffering.maxTempFileSize == 0)
        #expect(config.server.buffering.maxTempTotal == 8 << 30)
        #expect(config.upstream(named: "a")?.pool.maxShare == 0.25)
        #expect(config.upstream(named: "b")?.pool.maxShare == 1)
        #expect(config.upstream(named: "c")?.pool.maxShare == 0.75)
        #expect(config.routes.map(\.buffering) == [false, true])
    }

    @Test func badValuesAreLocated() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("buffering-\(UUID().uuidString)").path
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let found = problems(
            """
            server:
              buffering:
                memory: 1KiB
                temp_dir: /nonexistent-moya-buffers
                max_temp_total: lots
                spill: yes
            upstreams:
              a: { base_url: "http://127.0.0.1:18080", pool: { max_share: 0 } }
              b: { base_url: "http://127.0.0.1:18081", pool: { max_share: 150% } }
              c: { base_url: "http://127.0.0.1:18082", pool: { max_share: half } }
            routes:
              - { name: r, match: { path_prefix: /api }, upstream: a, buffering: sometimes }
            """)
        #expect(found.contains("conf/gw.yaml:3: server.buffering.memory: must be between 4KiB and 256MiB"), "\(found)")
        #expect(
            found.contains(
                "conf/gw.yaml:4: server.buffering.temp_dir: No such file or directory: /nonexistent-moya-buffers"),
            "\(found)")
        #expect(
            found.contains { $0.hasPrefix("conf/gw.yaml:5: server.buffering.max_temp_total: invalid size") }, "\(found)"
        )
        #expect(found.contains { $0.hasPrefix("conf/gw.yaml:6: server.buffering.spill: unknown key") }, "\(found)")
        #expect(
            found.contains("conf/gw.yaml:8: upstreams.a.pool.max_share: must be more than 0 and at most 1 (100%)"),
            "\(found)")
        #expect(
            found.contains("conf/gw.yaml:9: upstreams.b.pool.max_share: must be more than 0 and at most 1 (100%)"),
            "\(found)")
        #expect(
            found.contains {
                $0.hasPrefix("conf/gw.yaml:10: upstreams.c.pool.max_share: expected a fraction or a percentage")
            },
            "\(found)")
        #expect(
            found.contains { $0.hasPrefix("conf/gw.yaml:12: routes[0].buffering: expected true or false") }, "\(found)")
        let notADirectory = problems("server: { buffering: { temp_dir: \(file) } }\n" + Self.routes)
        #expect(
            notADirectory.contains("conf/gw.yaml:1: server.buffering.temp_dir: not a directory: \(file)"),
            "\(notADirectory)")
    }

    @Test func theDefaultDirectoryIsCheckedToo() {
        let reader = YAMLReader(file: "gw.yaml", environment: [:])
        BufferingConfigParser.checkDefaultTempDirectory(
            line: 3, reader: reader, tempDirectoryProblem: { _ in "read-only file system" })
        #expect(
            reader.problems.map(\.description)
                == [
                    "gw.yaml:3: server.buffering.temp_dir: read-only file system: /tmp (the default; set server.buffering.temp_dir)"
                ])
    }

    @Test func whichAnswersAreBuffered() {
        #expect(ResponseBuffering.applies(route: true, upstreamHeaders: ["Content-Type": "application/json"]))
        #expect(!ResponseBuffering.applies(route: false, upstreamHeaders: ["Content-Type": "application/json"]))
        #expect(
            !ResponseBuffering.applies(
                route: true, upstreamHeaders: ["Content-Type": "text/event-stream; charset=utf-8"]))
        #expect(!ResponseBuffering.applies(route: true, upstreamHeaders: ["X-Accel-Buffering": "no"]))
        #expect(!ResponseBuffering.applies(route: true, upstreamHeaders: ["x-accel-buffering": " No "]))
        #expect(ResponseBuffering.applies(route: false, upstreamHeaders: ["X-Accel-Buffering": "yes"]))
        #expect(ResponseBuffering.applies(route: true, upstreamHeaders: ["X-Accel-Buffering": "maybe"]))
        #expect(ResponseBuffering.applies(route: true, upstreamHeaders: nil))
        // Never forwarded to the client.
        let upstream: HTTPFields = ["X-Accel-Buffering": "no", "Content-Type": "text/plain"]
        let down = ProxyHeaders.downstream(from: upstream, requestID: "r")
        #expect(!down.contains(name: "X-Accel-Buffering"))
        #expect(down.first(name: "Content-Type") == "text/plain")
    }
}
