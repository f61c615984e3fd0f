import HTTPWire
import NetCore
import Testing

@testable import HTTPServerCore

/// The HTTP/1 response head as the server writes it, byte for byte: the handler's connection-level fields dropped,
/// the body framed, `Date` and `Connection` added, and a head that cannot be written refused whole.
@Suite struct ResponseHeadWriterTests {
    private static let date = Array("Date: Sun, 06 Dec 2026 20:00:00 GMT\r\n".utf8)

    private static func write(
        _ response: HTTPServerResponse, version: HTTPVersion = .http1_1, isHead: Bool = false, keepAlive: Bool = true
    ) throws -> (head: String, framing: HTTP1ResponseHeadWriter.Framing, keepAlive: Bool) {
        var keepAlive = keepAlive
        var output: [UInt8] = Array("before|".utf8)
        let framing = try HTTP1ResponseHeadWriter.write(
            response, version: version, isHead: isHead, keepAlive: &keepAlive, dateFieldLine: date, into: &output)
        let text = String(decoding: output, as: UTF8.self)
        #expect(text.hasPrefix("before|"))
        return (String(text.dropFirst(7)), framing, keepAlive)
    }

    @Test func connectionFieldsAreDroppedAndTheLengthIsTheBodys() throws {
        let headers: HTTPFields = [
            "Content-Type": "text/plain", "Connection": "x", "Keep-Alive": "timeout=5", "Transfer-Encoding": "gzip",
            "Content-Length": "99", "Content-Length": "98", "X-A": "1"
        ]
        let written = try Self.write(HTTPServerResponse(status: 200, headers: headers, body: Array("hello".utf8)))
        #expect(
            written.head
                == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nX-A: 1\r\n"
                + "Date: Sun, 06 Dec 2026 20:00:00 GMT\r\n\r\n")
        guard case .bytes = written.framing else {
            Issue.record("framing \(written.framing)")
            return
        }
        #expect(written.keepAlive)
    }

    @Test func theHandlersDateStaysAndAnEmptyBodyGetsALengthOfZero() throws {
        let response = HTTPServerResponse(head: HTTPResponseHead(status: 404, headers: ["Date": "then"]))
        let written = try Self.write(response, keepAlive: false)
        #expect(
            written.head == "HTTP/1.1 404 Not Found\r\nDate: then\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    }

    @Test func anUncommonStatusAndHTTP10KeepAlive() throws {
        let response = HTTPServerResponse(
            head: HTTPResponseHead(status: 299, reason: "Fine\tThanks", headers: ["X-B": "2"]),
            body: .bytes([1, 2]))
        let written = try Self.write(response, version: .http1_0)
        #expect(
            written.head
                == "HTTP/1.0 299 Fine\tThanks\r\nX-B: 2\r\nDate: Sun, 06 Dec 2026 20:00:00 GMT\r\n"
                + "Content-Length: 2\r\nConnection: keep-alive\r\n\r\n")
    }

    @Test func aStreamIsChunkedOnHTTP11AndCloseDelimitedOnHTTP10() throws {
        let chunked = try Self.write(
            HTTPServerResponse(head: HTTPResponseHead(status: 200), body: .stream(ByteStream())))
        #expect(
            chunked.head
                == "HTTP/1.1 200 OK\r\nDate: Sun, 06 Dec 2026 20:00:00 GMT\r\nTransfer-Encoding: chunked\r\n\r\n")
        guard case .stream(chunked: true) = chunked.framing else {
            Issue.record("framing \(chunked.framing)")
            return
        }
        let closing = try Self.write(
            HTTPServerResponse(head: HTTPResponseHead(status: 200), body: .stream(ByteStream())), version: .http1_0)
        #expect(closing.head == "HTTP/1.0 200 OK\r\nDate: Sun, 06 Dec 2026 20:00:00 GMT\r\nConnection: close\r\n\r\n")
        #expect(!closing.keepAlive)
    }

    @Test func aNoContentStatusAndAHeadRequestCarryNoBodyLength() throws {
        let noContent = try Self.write(
            HTTPServerResponse(status: 204, headers: ["Content-Length": "3"], body: [1, 2, 3]))
        #expect(noContent.head == "HTTP/1.1 204 No Content\r\nDate: Sun, 06 Dec 2026 20:00:00 GMT\r\n\r\n")
        let head = try Self.write(HTTPServerResponse(status: 200, body: [1, 2, 3]), isHead: true)
        #expect(head.head == "HTTP/1.1 200 OK\r\nDate: Sun, 06 Dec 2026 20:00:00 GMT\r\nContent-Length: 3\r\n\r\n")
        guard case .none = head.framing else {
            Issue.record("framing \(head.framing)")
            return
        }
    }

    @Test func aHeadThatCannotBeWrittenIsRefusedWhole() {
        for response in [
            HTTPServerResponse(status: 200, headers: ["X-Bad": "a\r\nInjected: 1"], body: []),
            HTTPServerResponse(status: 200, headers: ["Bad Name": "a"], body: []),
            HTTPServerResponse(head: HTTPResponseHead(status: 299, reason: "Bad\r\nReason")),
            HTTPServerResponse(head: HTTPResponseHead(status: 1000)),
            {
                var response = HTTPServerResponse(status: 200, headers: ["X-A": "1"], body: [])
                response.requestID = "id\r\nInjected: 1"
                return response
            }()
        ] {
            var keepAlive = true
            var output: [UInt8] = [1]
            #expect(throws: HTTP1SerializationError.self) {
                _ = try HTTP1ResponseHeadWriter.write(
                    response, version: .http1_1, isHead: false, keepAlive: &keepAlive, dateFieldLine: Self.date,
                    into: &output)
            }
            #expect(output == [1])
        }
    }

    @Test func theRequestIDGoesAfterTheHandlersFields() throws {
        var response = HTTPServerResponse(status: 201, headers: ["Content-Type": "text/plain", "X-A": "1"], body: [7])
        response.requestID = "4bf92f3577b34da6"
        let written = try Self.write(response)
        #expect(
            written.head
                == "HTTP/1.1 201 Created\r\nContent-Type: text/plain\r\nX-A: 1\r\nX-Request-Id: 4bf92f3577b34da6\r\n"
                + "Date: Sun, 06 Dec 2026 20:00:00 GMT\r\nContent-Length: 1\r\n\r\n")
        #expect(response.head.headers.count == 2, "the handler's list is left as it was")
        #expect(response.headWithRequestID.headers.first(name: "X-Request-Id") == "4bf92f3577b34da6")
    }

    @Test func aLargeHeadIsWrittenWhole() throws {
        var headers = HTTPFields()
        for index in 0..<200 { headers.add(name: "X-Field-\(index)", value: String(repeating: "v", count: 100)) }
        let written = try Self.write(HTTPServerResponse(status: 200, headers: headers, body: []))
        #expect(written.head.hasPrefix("HTTP/1.1 200 OK\r\nX-Field-0: \(String(repeating: "v", count: 100))\r\n"))
        #expect(written.head.hasSuffix("Date: Sun, 06 Dec 2026 20:00:00 GMT\r\nContent-Length: 0\r\n\r\n"))
        #expect(written.head.utf8.count > 200 * 110)
    }
}
