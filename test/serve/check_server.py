#!/usr/bin/env python3
"""kiln-serve end to end: a real server process on a free loopback port,
asked over HTTP as an OpenAI client would.

  check_server.py KILN_SERVE KILN_GENERATE KILN_TOKENIZE MODEL.kiln TOKENIZER_DIR WORK_DIR
                  KILN_RUN ENCODER.kiln

The model must have the tokenizer's vocabulary (models/export.py's
gpt2_vocab with the converted GPT-2 tokenizer). Checks the answers against
kiln-generate and kiln-tokenize, the OpenAI fields and errors, streaming,
stop strings, overload (429), a client that leaves mid-stream (its blocks come
back), and draining on SIGTERM; and /v1/embeddings on an encoder against
kiln-run's hidden states, mean-pooled. Prints one line per failed check and
'N passed, M failed'.
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

KILN_SERVE, KILN_GENERATE, KILN_TOKENIZE, MODEL, TOKENIZER, WORK, KILN_RUN, ENCODER = sys.argv[1:9]
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
          "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


class Tally:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what, detail=''):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f'FAIL {what}: {str(detail)[:400]}')


tally = Tally()


class Server:
    """A kiln-serve process on a free port, stopped on exit."""

    def __init__(self, *flags, model=MODEL):
        self.process = subprocess.Popen([KILN_SERVE, model, '--port', '0', *flags],
                                        stderr=subprocess.PIPE, text=True)
        line = self.process.stderr.readline()
        match = re.search(r'http://127\.0\.0\.1:(\d+)', line)
        if not match:
            raise RuntimeError(f'kiln-serve did not start: {line}{self.process.stderr.read()}')
        self.port = int(match.group(1))
        self.log = []
        threading.Thread(target=lambda: self.log.extend(self.process.stderr), daemon=True).start()

    def request(self, method, path, body=None, timeout=60):
        connection = http.client.HTTPConnection('127.0.0.1', self.port, timeout=timeout)
        payload = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        connection.request(method, path, body=payload,
                           headers={'Content-Type': 'application/json'})
        response = connection.getresponse()
        data = response.read().decode()
        connection.close()
        return response.status, dict(response.getheaders()), data

    def post(self, path, body):
        status, headers, data = self.request('POST', path, body)
        return status, headers, json.loads(data) if data else None

    def stream(self, path, body, stop_after=None):
        """The data: events of a streamed answer (all, or the first
        stop_after, then the connection is dropped)."""
        sock = socket.create_connection(('127.0.0.1', self.port), timeout=60)
        payload = json.dumps(body).encode()
        sock.sendall(b'POST ' + path.encode() + b' HTTP/1.1\r\nHost: x\r\n'
                     b'Content-Type: application/json\r\nContent-Length: ' +
                     str(len(payload)).encode() + b'\r\nConnection: close\r\n\r\n' + payload)
        buffer, events = b'', []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buffer += chunk
            events = re.findall(rb'data: (.*?)\n\n', buffer, re.S)
            if stop_after is not None and len(events) >= stop_after:
                sock.close()
                return [e.decode() for e in events[:stop_after]]
        sock.close()
        header, _, _ = buffer.partition(b'\r\n\r\n')
        return header.decode(errors='replace'), [e.decode() for e in events]

    def metric(self, name):
        _, _, text = self.request('GET', '/metrics')
        match = re.search(r'^' + re.escape(name) + r' (\S+)$', text, re.M)
        return float(match.group(1)) if match else None

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.returncode


def tokenize(text):
    return json.loads(subprocess.run([KILN_TOKENIZE, TOKENIZER], input=text, text=True,
                                     capture_output=True, check=True).stdout)


def detokenize(ids):
    return json.loads(subprocess.run([KILN_TOKENIZE, TOKENIZER, '--decode', '--skip-special-tokens'],
                                     input=json.dumps(ids), text=True, capture_output=True,
                                     check=True).stdout)


def generate(ids, *flags):
    out = subprocess.run([KILN_GENERATE, MODEL, '--prompt-ids', ','.join(map(str, ids)), '--json',
                          *flags], text=True, capture_output=True, check=True).stdout
    return json.loads(out.splitlines()[0])['output_ids']


def wait_for(condition, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def check_basics(server):
    status, _, body = server.request('GET', '/health')
    tally.check(status == 200 and json.loads(body) == {'status': 'ok'}, '/health', body)
    status, _, body = server.request('GET', '/v1/models')
    models = json.loads(body)
    tally.check(status == 200 and models['data'][0]['id'] == 'gpt2_vocab'
                and models['data'][0]['max_model_len'] > 0, '/v1/models', body)

    # Greedy text: the same tokens as kiln-generate, the text as kiln-tokenize
    # decodes them.
    prompt = 'The quick brown fox'
    ids = tokenize(prompt)
    expected = generate(ids, '--max-tokens', '12', '--temperature', '0')
    status, _, body = server.post('/v1/completions', {
        'model': 'gpt2_vocab', 'prompt': prompt, 'max_tokens': 12, 'temperature': 0,
        'return_token_ids': True})
    choice = body['choices'][0] if status == 200 else {}
    tally.check(choice.get('token_ids') == expected, 'greedy tokens match kiln-generate',
                (choice.get('token_ids'), expected))
    tally.check(choice.get('text') == detokenize(expected), 'text is the decoded tokens', choice)
    tally.check(body.get('usage') == {'prompt_tokens': len(ids), 'completion_tokens': 12,
                                      'total_tokens': len(ids) + 12}, 'usage', body.get('usage'))
    tally.check(body.get('object') == 'text_completion' and body['id'].startswith('cmpl-'),
                'completion envelope', body)

    # Token-id prompts give the same answer.
    status, _, by_ids = server.post('/v1/completions', {
        'prompt': ids, 'max_tokens': 12, 'temperature': 0, 'return_token_ids': True})
    tally.check(status == 200 and by_ids['choices'][0]['token_ids'] == expected,
                'a token-id prompt', by_ids)

    # Streaming: the pieces add up to the whole answer, then usage, then [DONE].
    header, events = server.stream('/v1/completions', {
        'prompt': prompt, 'max_tokens': 12, 'temperature': 0, 'stream': True,
        'return_token_ids': True, 'stream_options': {'include_usage': True}})
    tally.check('text/event-stream' in header, 'stream content type', header)
    tally.check(events and events[-1] == '[DONE]', 'stream ends with [DONE]', events[-3:])
    chunks = [json.loads(e) for e in events[:-1]]
    text = ''.join(c['choices'][0]['text'] for c in chunks if c['choices'])
    streamed_ids = [t for c in chunks if c['choices'] for t in c['choices'][0]['token_ids']]
    tally.check(text == choice.get('text') and streamed_ids == expected,
                'streamed text and ids equal the whole answer', (text, streamed_ids))
    tally.check(chunks[-1]['choices'] == [] and chunks[-1]['usage']['completion_tokens'] == 12,
                'stream usage chunk', chunks[-1])
    finishes = [c['choices'][0]['finish_reason'] for c in chunks if c['choices']]
    tally.check(finishes[-1] == 'length' and all(f is None for f in finishes[:-1]),
                'stream finish_reason', finishes)

    # n choices with a seed: reproducible, and not all the same.
    # The random model repeats its last token; a repetition penalty makes
    # its draws vary.
    varied = {'temperature': 1.0, 'repetition_penalty': 5.0}
    request = dict(varied, prompt=prompt, max_tokens=8, n=3, seed=7, return_token_ids=True)
    first, second = server.post('/v1/completions', request)[2], server.post('/v1/completions', request)[2]
    ids_of = lambda body: [c['token_ids'] for c in body['choices']]
    tally.check(len(first['choices']) == 3 and ids_of(first) == ids_of(second),
                'seeded n=3 is reproducible', (ids_of(first), ids_of(second)))
    tally.check(len({tuple(i) for i in ids_of(first)}) > 1, 'n choices differ', ids_of(first))

    # A stop string ends the text before it.
    sampled = server.post('/v1/completions', dict(varied, prompt=prompt, max_tokens=24,
                                                  seed=3))[2]['choices'][0]['text']
    stop = sampled[len(sampled) // 2:len(sampled) // 2 + 3]
    status, _, body = server.post('/v1/completions', dict(varied, prompt=prompt, max_tokens=24,
                                                          seed=3, stop=[stop]))
    cut = body['choices'][0]
    tally.check(len(stop) == 3 and sampled.index(stop) > 0
                and cut['text'] == sampled[:sampled.index(stop)] and cut['finish_reason'] == 'stop',
                'stop string', (stop, sampled, cut))
    header, events = server.stream('/v1/completions', dict(varied, prompt=prompt, max_tokens=24,
                                                           seed=3, stop=stop, stream=True))
    text = ''.join(json.loads(e)['choices'][0]['text'] for e in events[:-1])
    tally.check(text == cut['text'], 'streamed stop string', (text, cut['text']))

    # Log-probabilities: one per token, with the top 2.
    status, _, body = server.post('/v1/completions', {'prompt': prompt, 'max_tokens': 4,
                                                      'temperature': 0, 'logprobs': 2})
    logprobs = body['choices'][0]['logprobs']
    tally.check(len(logprobs['tokens']) == 4 and all(len(t) == 2 for t in logprobs['top_logprobs'])
                and all(lp <= 0 for lp in logprobs['token_logprobs']), 'logprobs', logprobs)

    # echo puts the prompt before the text.
    status, _, body = server.post('/v1/completions', {'prompt': prompt, 'max_tokens': 3,
                                                      'temperature': 0, 'echo': True})
    tally.check(body['choices'][0]['text'].startswith(prompt), 'echo', body)


def check_errors(server):
    cases = [
        ({'prompt': 'x', 'temperature': 5}, 400, 'temperature'),
        ({'prompt': 'x', 'max_tokens': 1000000}, 400, 'max_tokens'),
        ({'prompt': 'x', 'n': 0}, 400, 'n'),
        ({'prompt': 'x', 'top_p': 'high'}, 400, 'top_p'),
        ({'prompt': [1, 99999999]}, 400, 'prompt'),
        ({'max_tokens': 3}, 400, 'prompt'),
        ({'prompt': 'x', 'stop': [1]}, 400, 'stop'),
        ({'prompt': 'x', 'model': 'nope'}, 404, 'model'),
        ({'prompt': 'x', 'stream_options': {'include_usage': True}}, 400, 'stream_options'),
    ]
    for body, status, param in cases:
        got, _, answer = server.post('/v1/completions', body)
        error = (answer or {}).get('error', {})
        tally.check(got == status and error.get('param') == param and error.get('message'),
                    f'{json.dumps(body)} is refused naming {param}', (got, answer))
    got, _, answer = server.post('/v1/completions', b'{not json')
    tally.check(got == 400 and 'not valid JSON' in answer['error']['message'], 'bad JSON', answer)
    got, _, answer = server.request('GET', '/v1/nothing')
    tally.check(got == 404 and 'no such endpoint' in json.loads(answer)['error']['message'],
                'unknown endpoint', answer)
    # Unknown fields are ignored, as OpenAI ignores them.
    got, _, answer = server.post('/v1/completions', {'prompt': 'x', 'max_tokens': 1,
                                                     'some_future_field': {'a': 1}})
    tally.check(got == 200, 'unknown fields are ignored', answer)
    got, _, answer = server.post('/v1/embeddings', {'input': [1, 2]})
    tally.check(got == 400 and 'embeddings need an encoder' in answer['error']['message'],
                'a decoder does not embed', answer)
    # Chat without a template in the tokenizer's config.
    got, _, answer = server.post('/v1/chat/completions',
                                 {'messages': [{'role': 'user', 'content': 'hi'}]})
    tally.check(got == 400 and 'chat template' in answer['error']['message'],
                'chat without a template', answer)


def check_chat(server):
    messages = [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'Hello!'}]
    rendered = ''.join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    rendered += '<|im_start|>assistant\n'
    ids = json.loads(subprocess.run([KILN_TOKENIZE, TOKENIZER, '--no-special-tokens'],
                                    input=rendered, text=True, capture_output=True,
                                    check=True).stdout)
    expected = generate(ids, '--max-tokens', '6', '--temperature', '0')
    status, _, body = server.post('/v1/chat/completions', {
        'messages': messages, 'max_tokens': 6, 'temperature': 0, 'return_token_ids': True})
    choice = body['choices'][0] if status == 200 else {}
    tally.check(choice.get('token_ids') == expected and choice['message']['role'] == 'assistant'
                and body['object'] == 'chat.completion', 'chat through the template', body)
    header, events = server.stream('/v1/chat/completions', {
        'messages': messages, 'max_tokens': 6, 'temperature': 0, 'stream': True})
    chunks = [json.loads(e) for e in events[:-1]]
    text = ''.join(c['choices'][0]['delta'].get('content', '') for c in chunks)
    tally.check(chunks[0]['choices'][0]['delta'].get('role') == 'assistant'
                and text == choice['message']['content']
                and chunks[0]['object'] == 'chat.completion.chunk', 'streamed chat', chunks[:2])


def check_overload_and_disconnect(server):
    # Two long streams fill a server that serves two at once; a third gets 429.
    slow = {'prompt': 'Once upon a time', 'max_tokens': 200, 'temperature': 1.0,
            'ignore_eos': True, 'stream': True}
    holders = [threading.Thread(target=server.stream, args=('/v1/completions', slow, 2))
               for _ in range(2)]
    sockets = []
    for _ in range(2):
        sock = socket.create_connection(('127.0.0.1', server.port))
        payload = json.dumps(slow).encode()
        sock.sendall(b'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json'
                     b'\r\nContent-Length: ' + str(len(payload)).encode() + b'\r\n\r\n' + payload)
        sock.recv(100)  # the stream has started
        sockets.append(sock)
    status, headers, body = server.post('/v1/completions', {'prompt': 'x', 'max_tokens': 1})
    tally.check(status == 429 and headers.get('Retry-After') == '1'
                and body['error']['type'] == 'rate_limit_exceeded', 'overload gives 429', (status, body))
    # Both clients leave: their sequences are aborted and every block is free.
    for sock in sockets:
        sock.close()
    del holders
    tally.check(wait_for(lambda: server.metric('kiln_num_requests_running') == 0
                         and server.metric('kiln_kv_blocks_used') == 0
                         and server.metric('kiln_http_requests_active') == 0),
                'a client that leaves frees its blocks',
                (server.metric('kiln_num_requests_running'), server.metric('kiln_kv_blocks_used')))
    _, _, metrics = server.request('GET', '/metrics')
    tally.check('kiln_request_success_total{finished_reason="abort"} 2' in metrics
                and 'kiln_request_rejected_total{status="429"} 1' in metrics
                and 'kiln_time_to_first_token_seconds_count' in metrics, 'metrics count them',
                metrics[:2000])


def check_drain():
    server = Server('--tokenizer', TOKENIZER, '--drain-timeout', '20')
    result = {}
    request = {'prompt': 'Once upon a time', 'max_tokens': 60, 'temperature': 1.0,
               'ignore_eos': True}
    thread = threading.Thread(target=lambda: result.update(answer=server.post('/v1/completions', request)))
    thread.start()
    wait_for(lambda: (server.metric('kiln_num_requests_running') or 0) > 0)
    server.process.send_signal(signal.SIGTERM)
    thread.join(60)
    status, _, body = result.get('answer', (None, None, None))
    tally.check(status == 200 and body['usage']['completion_tokens'] == 60,
                'SIGTERM lets a request in flight finish', (status, body))
    try:
        server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.process.kill()
    tally.check(server.process.returncode == 0, 'the server exits 0 after draining',
                ''.join(server.log))


def check_embeddings():
    import numpy as np
    server = Server(model=ENCODER)
    try:
        inputs = [[5, 17, 42, 8], [1, 2, 3, 4, 5, 6, 7, 9, 200]]
        status, _, body = server.post('/v1/embeddings', {'input': inputs, 'model': 'bert_tiny'})
        tally.check(status == 200 and len(body['data']) == 2
                    and body['usage']['prompt_tokens'] == 13, 'embeddings answer', body)
        for index, ids in enumerate(inputs):
            folder = os.path.join(WORK, f'embed{index}')
            os.makedirs(folder, exist_ok=True)
            feeds = {'input_ids': np.array([ids], dtype=np.int64),
                     'attention_mask': np.ones((1, len(ids)), dtype=np.int64),
                     'token_type_ids': np.zeros((1, len(ids)), dtype=np.int64)}
            flags = []
            for name, value in feeds.items():
                np.save(os.path.join(folder, f'{name}.npy'), value)
                flags += ['--input', f'{name}={os.path.join(folder, name + ".npy")}']
            subprocess.run([KILN_RUN, ENCODER, *flags, '--output-dir', folder], check=True,
                           capture_output=True)
            expected = np.load(os.path.join(folder, 'last_hidden_state.npy'))[0].mean(axis=0)
            got = np.array(body['data'][index]['embedding'], dtype=np.float32)
            error = float(np.abs(got - expected).max() / np.abs(expected).max())
            tally.check(got.shape == expected.shape and error <= 1e-5,
                        f'embedding {index} is the mean of kiln-run\'s hidden states', error)
        status, _, body = server.post('/v1/embeddings', {'input': 'text'})
        tally.check(status == 400 and body['error']['param'] == 'input',
                    'text embeddings need a tokenizer', body)
        status, _, body = server.post('/v1/completions', {'prompt': [1]})
        tally.check(status == 400 and 'use /v1/embeddings' in body['error']['message'],
                    'an encoder does not complete', body)
    finally:
        tally.check(server.stop() == 0, 'the encoder server exits 0', ''.join(server.log))


def main():
    os.makedirs(WORK, exist_ok=True)
    # A copy of the tokenizer whose config carries a ChatML template.
    chat_tokenizer = os.path.join(WORK, 'gpt2_chatml')
    shutil.rmtree(chat_tokenizer, ignore_errors=True)
    shutil.copytree(TOKENIZER, chat_tokenizer)
    config_path = os.path.join(chat_tokenizer, 'tokenizer_config.json')
    config = json.load(open(config_path))
    config['chat_template'] = CHATML
    json.dump(config, open(config_path, 'w'))

    server = Server('--tokenizer', TOKENIZER, '--max-active-requests', '2')
    try:
        check_basics(server)
        check_errors(server)
        check_overload_and_disconnect(server)
    finally:
        tally.check(server.stop() == 0, 'exit status after SIGTERM', ''.join(server.log))
    server = Server('--tokenizer', chat_tokenizer)
    try:
        check_chat(server)
    finally:
        server.stop()
    check_drain()
    check_embeddings()
    print(f'{tally.passed} passed, {tally.failed} failed')
    sys.exit(1 if tally.failed else 0)


if __name__ == '__main__':
    main()
