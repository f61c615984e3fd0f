import Foundation
import HTTPWire
import Testing

@testable import Gateway

@Suite struct HopByHopTests {
    @Test func removesStandardAndConnectionListedFields() {
        let headers: HTTPFields = [
            "Connection": "keep-alive, X-Internal, host", "Keep-Alive": "timeout=5", "TE": "trailers",
            "Transfer-Encoding": "chunked", "Upgrade": "h2c", "Proxy-Authorization": "Basic x",
            "Proxy-Connection": "keep-alive", "Trailer": "X", "x-internal": "1", "Host": "gw", "Accept": "*/*",
            "HTTP2-Settings": "AAMAAABkAAQAoAAAAAIAAAAA"
        ]
        let kept = HopByHop.removing(from: headers)
        #expect(kept.map(\.name) == ["Host", "Accept"])
        var mutable = headers
        HopByHop.remove(from: &mutable)
        #expect(mutable == kept)
    }
}
