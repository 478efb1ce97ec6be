// Tests run in Node: install the Node host up front (kernels read from src/kernels on disk, Dawn, files on disk).
import '../src/node/host.ts';
