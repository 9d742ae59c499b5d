// SPDX-License-Identifier: MIT
// grpcpp_stock ADDRESS: Debian's gRPC C++ (libgrpc++), default channel
// options, against ampd through the generic stub (bytes in, bytes out: no
// generated code): a Reverse and a Health Check answered right, and a
// Reverse whose 5 MiB reply is past grpc++'s default 4 MiB receive limit
// refused first with RESOURCE_EXHAUSTED naming amp-max-reply-bytes (issue
// 38). Prints "ok ..." lines; exits 1 at the first difference.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <string>

namespace {

const auto kCallTime = std::chrono::seconds(60);
const size_t kBig = 5u << 20;

std::string Varint(size_t n)
{
    std::string out;
    for (; n >= 0x80; n >>= 7)
        out.push_back(static_cast<char>((n & 0x7f) | 0x80));
    out.push_back(static_cast<char>(n));
    return out;
}

// Field 1 of a message, length-delimited: ReverseRequest.data, DataReply.data.
std::string Field1(const std::string &data) { return "\x0a" + Varint(data.size()) + data; }

// The bytes of field 1 at the head of msg (a reply also names its device,
// after it); "" when msg starts otherwise.
std::string First(const std::string &msg)
{
    size_t i = 1, len = 0;
    if (msg.empty() || msg[0] != '\x0a')
        return "";
    for (int shift = 0; i < msg.size(); shift += 7) {
        unsigned char b = static_cast<unsigned char>(msg[i++]);
        len |= static_cast<size_t>(b & 0x7f) << shift;
        if (b < 0x80)
            break;
    }
    return msg.substr(i, len);
}

std::string ToString(const grpc::ByteBuffer &b)
{
    std::vector<grpc::Slice> slices;
    std::string out;
    if (b.Dump(&slices).ok())
        for (const auto &s : slices)
            out.append(reinterpret_cast<const char *>(s.begin()), s.size());
    return out;
}

grpc::Status Call(grpc::GenericStub &stub, const std::string &method, const std::string &req,
                  std::string *reply)
{
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kCallTime);
    grpc::Slice slice(req);
    grpc::ByteBuffer in(&slice, 1), out;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&ctx, method, grpc::StubOptions(), &in, &out,
                   [&done](grpc::Status s) { done.set_value(s); });
    grpc::Status s = done.get_future().get();
    *reply = ToString(out);
    return s;
}

int Fail(const std::string &what)
{
    std::printf("FAIL %s\n", what.c_str());
    return 1;
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc != 2)
        return Fail("usage: grpcpp_stock ADDRESS");
    grpc::GenericStub stub(grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
    std::string data, reply;
    for (size_t i = 0; i < 100003; i++)
        data.push_back(static_cast<char>(i * 131 + (i >> 8)));
    grpc::Status s = Call(stub, "/amp.v1.Amp/Reverse", Field1(data), &reply);
    if (!s.ok() || First(reply) != std::string(data.rbegin(), data.rend()))
        return Fail("reverse: " + std::to_string(s.error_code()) + " " + s.error_message());
    s = Call(stub, "/grpc.health.v1.Health/Check", "", &reply);
    if (!s.ok() || reply != "\x08\x01")
        return Fail("health: " + s.error_message());
    std::printf("ok   reverse, health SERVING\n");
    s = Call(stub, "/amp.v1.Amp/Reverse", Field1(std::string(kBig, '\0')), &reply);
    if (s.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED ||
        s.error_message().find("amp-max-reply-bytes") == std::string::npos)
        return Fail("a 5 MiB reply: " + std::to_string(s.error_code()) + " " + s.error_message());
    std::printf("ok   a reply past 4 MiB refused first, saying what to do\n");
    return 0;
}
