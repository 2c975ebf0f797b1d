// codec.cpp — picks the encoder and decoder of a protocol.
#include "codec.hpp"

namespace pd3::loadgen {

std::unique_ptr<RequestEncoder> make_encoder(Protocol p, uint32_t value_size) {
  return p == Protocol::kResp ? make_resp_encoder(value_size) : make_binary_encoder();
}

std::unique_ptr<ReplyDecoder> make_decoder(Protocol p) {
  return p == Protocol::kResp ? make_resp_decoder() : make_binary_decoder();
}

}  // namespace pd3::loadgen
