"""BERT-style embeddings: word + learned position + token-type embeddings, LayerNorm, position_ids buffer."""
import torch
import torch.nn as nn


class BertEmbeddings(nn.Module):
    def __init__(self, vocab_size=60, hidden_size=16, max_position_embeddings=16, type_vocab_size=2):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_position_embeddings, hidden_size)
        self.token_type_embeddings = nn.Embedding(type_vocab_size, hidden_size)
        self.LayerNorm = nn.LayerNorm(hidden_size, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        self.register_buffer(
            "position_ids", torch.arange(max_position_embeddings).expand((1, -1)), persistent=False
        )

    def forward(self, input_ids, token_type_ids=None, past_key_values_length=0):
        input_shape = input_ids.size()
        seq_length = input_shape[1]
        position_ids = self.position_ids[:, past_key_values_length : seq_length + past_key_values_length]
        if token_type_ids is None:
            token_type_ids = torch.zeros(input_shape, dtype=torch.long, device=input_ids.device)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        embeddings = self.LayerNorm(embeddings)
        return self.dropout(embeddings)


def make_model():
    torch.manual_seed(0)
    return BertEmbeddings().eval()


def make_inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(1, 60, (2, 8), generator=g)
    token_type_ids = torch.cat([torch.zeros(2, 4), torch.ones(2, 4)], dim=1).long()
    return (input_ids, token_type_ids)


EXPECTED_GRAPHS = 1
