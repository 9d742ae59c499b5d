# SPDX-License-Identifier: MIT
# ruby_stock.rb ADDRESS: Debian's Ruby gRPC (ruby-grpc), default options,
# against ampd: a Reverse and a Transform answered right, a Health Check,
# and a Reverse whose 5 MiB reply is past Ruby's default 4 MiB receive
# limit refused first with RESOURCE_EXHAUSTED naming amp-max-reply-bytes
# (issue 38: stock clients had thrown such replies away after the device
# work). Messages are encoded by hand: the few fields these calls use.
# Prints "ok ..." lines; exits 1 at the first difference.
require 'grpc'

address = ARGV.fetch(0)
stub = GRPC::ClientStub.new(address, :this_channel_is_insecure)
same = ->(x) { x }

def varint(n)
  out = ''.b
  while n >= 0x80
    out << ((n & 0x7f) | 0x80).chr
    n >>= 7
  end
  out << n.chr
end

def field(num, data)
  varint(num << 3 | 2) + varint(data.bytesize) + data.b
end

def first_bytes_field(msg)
  raise 'not field 1' unless msg.getbyte(0) == 0x0a
  i, len, shift = 1, 0, 0
  loop do
    b = msg.getbyte(i)
    i += 1
    len |= (b & 0x7f) << shift
    shift += 7
    break if b < 0x80
  end
  msg.byteslice(i, len)
end

def fail!(what)
  puts "FAIL #{what}"
  exit 1
end

call = ->(method, req) { stub.request_response("/amp.v1.Amp/#{method}", req, same, same, deadline: Time.now + 60) }

data = (0...100_003).map { |i| (i * 131 + (i >> 8)) & 0xff }.pack('C*')
got = first_bytes_field(call.call('Reverse', field(1, data)))
fail!('reverse') unless got == data.reverse
xor = field(2, varint(1 << 3) + varint(2) + varint(2 << 3) + varint(0x5a))   # TransformParams{op: XOR, value}
got = first_bytes_field(call.call('Transform', field(1, data) + xor))
fail!('transform xor') unless got == data.bytes.map { |b| b ^ 0x5a }.pack('C*')
puts 'ok   reverse, transform'

health = stub.request_response('/grpc.health.v1.Health/Check', ''.b, same, same, deadline: Time.now + 60)
fail!("health #{health.inspect}") unless health == "\x08\x01".b
puts 'ok   health SERVING'

begin
  call.call('Reverse', field(1, "\0".b * (5 << 20)))
  fail!('a 5 MiB reply came back')
rescue GRPC::ResourceExhausted => e
  fail!("a 5 MiB reply: #{e.details}") unless e.details.include?('amp-max-reply-bytes')
end
puts 'ok   a reply past 4 MiB refused first, saying what to do'
