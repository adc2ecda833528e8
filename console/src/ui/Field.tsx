import { useId, type ReactNode } from 'react'

/**
 * A labelled form control with its help text and error: the control gets `aria-invalid` and
 * `aria-describedby` pointing at them, so a screen reader reads the API's message with the field.
 * `children` is a render function receiving the id and aria props for the control.
 */
export function Field({
  label,
  help,
  error,
  required,
  children,
}: {
  label: string
  help?: string | undefined
  error?: string | undefined
  required?: boolean | undefined
  children: (control: {
    id: string
    'aria-invalid': boolean | undefined
    'aria-describedby': string | undefined
    required: boolean | undefined
  }) => ReactNode
}) {
  const id = useId()
  const described = [help === undefined ? '' : `${id}-help`, error === undefined ? '' : `${id}-error`]
    .filter(Boolean)
    .join(' ')
  return (
    <div className={`field${error === undefined ? '' : ' field-invalid'}`}>
      <label htmlFor={id}>
        {label}
        {required === true ? <span aria-hidden="true"> *</span> : null}
      </label>
      {children({
        id,
        'aria-invalid': error === undefined ? undefined : true,
        'aria-describedby': described === '' ? undefined : described,
        required,
      })}
      {help === undefined ? null : (
        <p id={`${id}-help`} className="field-help">
          {help}
        </p>
      )}
      {error === undefined ? null : (
        <p id={`${id}-error`} className="field-error" role="alert">
          {error}
        </p>
      )}
    </div>
  )
}
