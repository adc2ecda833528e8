import { ApiError, errorOf, proxyUrl } from '../../api/client.ts'

/*
 * A multipart upload to POST /files/{ns}/{collection} with progress: XMLHttpRequest, because its
 * upload.onprogress is the one browser API that reports bytes sent for a request body (fetch does
 * not). Every upload of an existing name is a new version (update_existing is the default).
 */
export interface UploadedFile {
  name: string
  current_version: number
}

export function uploadFile(
  ns: string,
  collection: string,
  file: File,
  opts: { visibility?: 'private' | 'shared'; onProgress: (sent: number, total: number) => void; signal?: AbortSignal },
): Promise<UploadedFile> {
  return new Promise((resolve, reject) => {
    const form = new FormData()
    // the fields travel before the file: the gateway streams the file part straight to storage
    if (opts.visibility !== undefined) form.append('visibility', opts.visibility)
    form.append('update_existing', 'true')
    form.append('file', file, file.name)
    const xhr = new XMLHttpRequest()
    xhr.open('POST', proxyUrl(`/files/${ns}/${collection}`, true))
    // the console proxy's CSRF guard, as api() sends it on every unsafe method
    xhr.setRequestHeader('x-console-request', '1')
    xhr.responseType = 'text'
    xhr.upload.onprogress = (e) => opts.onProgress(e.loaded, e.lengthComputable ? e.total : file.size)
    xhr.onload = () => {
      const res = new Response(xhr.responseText, { status: xhr.status, statusText: xhr.statusText })
      if (xhr.status >= 200 && xhr.status < 300) res.json().then((b) => resolve(b as UploadedFile), reject)
      else errorOf(res).then(reject, reject)
    }
    xhr.onerror = () => reject(new ApiError(0, 'network.error', 'the upload did not reach the platform'))
    xhr.onabort = () => reject(new ApiError(0, 'upload.aborted', 'upload cancelled'))
    opts.signal?.addEventListener('abort', () => xhr.abort(), { once: true })
    xhr.send(form)
  })
}
